//! `cargo run --release -p ccsim-experiments --example cxl_bench -- [LOADS] [--profile]`:
//! the CXL.cache coherent benchmark (`ccsim bench coherent --platform
//! cohet`) without the Python package; `--profile` runs only the
//! checks-off loads (for perf or callgrind).

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let loads = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map(|a| a.parse().expect("LOADS: a whole number"))
        .unwrap_or(200_000);
    if args.iter().any(|a| a == "--profile") {
        let p = ccsim_platform::Platform::load("cohet").expect("the shipped cohet platform");
        let (s, events) =
            ccsim_experiments::bench::run_cxl_loads(&p, "cxl", loads, false).expect("runs");
        println!("{loads} loads, {events} events, {s:.3} s");
        return;
    }
    match ccsim_experiments::bench::cxl_coherent_bench(loads) {
        Ok(r) => println!("{r:#?}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
