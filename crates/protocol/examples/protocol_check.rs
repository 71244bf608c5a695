//! Checks a spec with a given DCU mapping and prints the report.
//!
//! `cargo run --release -p ccsim-protocol --example protocol_check -- eci-dc 0,0 [values]`

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map(String::as_str).unwrap_or("eci-dc");
    let spec = match ccsim_protocol::load_spec(name) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let dcus: Vec<u8> = args
        .get(2)
        .map(|s| {
            s.split(',')
                .map(|x| x.parse().expect("DCU number"))
                .collect()
        })
        .unwrap_or_else(|| spec.check.dcus.clone());
    let values = args
        .get(3)
        .map(|v| v.parse().expect("values"))
        .unwrap_or(spec.check.values);
    let cfg = ccsim_protocol::SystemConfig {
        dcus,
        values,
        max_in_flight: spec.check.max_in_flight,
        instances: spec.check.instances.clone(),
    };
    let r = ccsim_protocol::check(
        &spec,
        &ccsim_protocol::CheckOptions {
            config: Some(cfg),
            max_states: 0,
        },
    )
    .expect("generates");
    print!("{}", r.to_text());
    std::process::exit(if r.verified { 0 } else { 1 });
}
