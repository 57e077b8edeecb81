fn main() {
    let rules = einsat::egraph::rules::builtin_rules();
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    for r in einsat::egraph::check::check_rules(&rules, n, 1) {
        println!(
            "{:20} tried {:4} skipped {:4} mismatches {}",
            r.name, r.tried, r.skipped, r.mismatches
        );
        if let Some(c) = r.counterexample {
            println!("{c}");
        }
    }
}
