use einsat::opt::{optimize, Options};
use einsat::syntax::print_function;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let src = std::fs::read_to_string(&args[1]).unwrap();
    let prog = einsat::load(&src).unwrap();
    for f in &prog.functions {
        if args.len() > 2 && f.name != args[2] {
            continue;
        }
        let o = Options {
            explain: std::env::var("EXPLAIN").is_ok(),
            ..Options::default()
        };
        let r = optimize(f, &o).unwrap();
        print!("{}", print_function(&r.program));
        println!("  # normal={} cost {} -> {}  nodes={} classes={} iters={} stop={} time={:.3}s chosen={}",
            einsat::extract::is_normal(&r.program), r.cost_before, r.cost_after,
            r.report.egraph_nodes, r.report.egraph_classes, r.report.iterations, r.report.stop_reason, r.report.total_seconds, r.report.chosen);
        if let Some(e) = &r.report.explanation {
            for l in e {
                println!("    {l}");
            }
        }
    }
}
