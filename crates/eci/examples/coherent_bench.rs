//! Prints the coherent-simulator benchmark report:
//! `cargo run --release -p ccsim-eci --example coherent_bench [READS] [MEMORY_LINES]`.

fn main() {
    let mut args = std::env::args().skip(1);
    let mut num = |default: u64| {
        args.next()
            .map(|a| a.parse().expect("arguments are counts"))
            .unwrap_or(default)
    };
    let (reads, memory_lines) = (num(200_000), num(100_000));
    match ccsim_eci::bench::coherent_bench(reads, memory_lines) {
        Ok(r) => println!("{r:#?}"),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
