//! Prints the generator counts and mutant counts of every shipped spec.
//!
//! `cargo run -p ccsim-protocol --example protocol_counts`

fn main() {
    for info in ccsim_protocol::list_specs() {
        let spec = ccsim_protocol::load_spec(info.name).expect("shipped spec loads");
        let (ir, stats) = ccsim_protocol::generate(&spec).expect("shipped spec generates");
        let mutants = ccsim_protocol::mutate::mutants(&ir).len();
        println!("{}: {stats:?}; {mutants} mutants", info.name);
    }
}
