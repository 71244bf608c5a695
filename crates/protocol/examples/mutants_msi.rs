//! Mutation survey: checks every single-row mutant of every role of a spec
//! and lists the ones the checker does not catch:
//! `cargo run --release -p ccsim-protocol --example mutants_msi -- msi-dma [caches]`.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).cloned().unwrap_or_else(|| "msi-dma".into());
    let spec = ccsim_protocol::load_spec(&name).unwrap();
    let (ir, stats) = ccsim_protocol::generate(&spec).unwrap();
    let mut cfg: ccsim_protocol::SystemConfig = (&spec.check).into();
    if let Some(n) = args.get(2) {
        cfg.instances.insert("cache".into(), n.parse().unwrap());
    }
    let base = ccsim_protocol::check_ir(ir.clone(), stats.clone(), cfg.clone(), 0).unwrap();
    println!(
        "{} states, {} rules, {:.2} s",
        base.reachable_states, base.system_transitions, base.seconds
    );
    for r in 0..ir.roles.len() {
        let ms = ccsim_protocol::mutate::mutants_of_role(&ir, r);
        let mut survived = Vec::new();
        for m in &ms {
            let rep =
                ccsim_protocol::check_ir(m.ir.clone(), stats.clone(), cfg.clone(), 0).unwrap();
            if rep.verified {
                survived.push(m.description.clone());
            }
        }
        println!(
            "{}: {} mutants, {} survived",
            ir.roles[r].name,
            ms.len(),
            survived.len()
        );
        for s in survived {
            println!("   {s}");
        }
    }
}
