//! Prints the kernel benchmark as JSON: `cargo run --release -p ccsim-kernel --example kernel_bench [EVENTS]`.
fn main() {
    let events = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5_000_000);
    let r = ccsim_kernel::bench::kernel_bench(events);
    println!(
        "{}",
        serde_json::to_string_pretty(&r).expect("serializable")
    );
}
