//! Writes the Murphi model of a spec's composed system to stdout:
//! `cargo run -p ccsim-protocol --example murphi_export -- msi-dma > msi.m`.
fn main() {
    let name = std::env::args().nth(1).unwrap_or_else(|| "eci-dc".into());
    let spec = ccsim_protocol::load_spec(&name).expect("spec");
    let (ir, _) = ccsim_protocol::generate(&spec).expect("generates");
    print!(
        "{}",
        ccsim_protocol::export::export_murphi(&ir, &(&spec.check).into())
    );
}
