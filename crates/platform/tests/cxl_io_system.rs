//! Cohet's `[systems.cxl_io]`: the DCOH behind a `cxl_flexbus` that is a
//! component of the system (named after its instance, its CXL.io ports
//! left to the workload), and the errors of a flexbus wired wrongly.

use ccsim_kernel::prelude::*;
use ccsim_platform::{BuildOptions, Platform};

/// Cohet's platform file with `old` replaced by `new` (once).
fn cohet_with(old: &str, new: &str) -> Result<Platform, ccsim_platform::ConfigError> {
    let text = ccsim_platform::shipped_text("platform", "cohet").unwrap();
    assert!(text.contains(old), "{old}");
    Platform::from_toml_str(
        "platforms/bad.toml",
        &text.replacen(old, new, 1),
        &ccsim_platform::registry(),
    )
}

fn opts() -> BuildOptions {
    BuildOptions {
        seed: 1,
        trace: TraceMode::Off,
        checks: true,
        tester: None,
    }
}

#[test]
fn the_flexbus_is_a_named_component_and_attach_sees_it() {
    let p = Platform::load("cohet").unwrap();
    let s = p.build("cxl_io", opts()).unwrap();
    assert!(s.components.contains_key("flexbus"));
    assert!(s.components.contains_key("dcoh") && s.components.contains_key("mesh"));
    let mut seen = Vec::new();
    let mut hook = |_: &mut SystemBuilder<_>,
                    named: &std::collections::BTreeMap<String, ComponentId>| {
        seen = named.keys().cloned().collect::<Vec<_>>();
        Ok(())
    };
    p.build_attached("cxl_io", opts(), &mut hook).unwrap();
    assert!(seen.contains(&"flexbus".to_string()), "{seen:?}");
    // An error of the hook is the build's, naming the system.
    let mut failing = |_: &mut SystemBuilder<_>,
                       _: &std::collections::BTreeMap<String, ComponentId>| {
        Err("no root complex to attach".to_string())
    };
    let Err(e) = p.build_attached("cxl_io", opts(), &mut failing) else {
        panic!("the hook's error did not fail the build");
    };
    let e = e.to_string();
    assert!(
        e.contains("cxl_io") && e.contains("no root complex to attach"),
        "{e}"
    );
}

#[test]
fn a_flexbus_used_twice_or_not_ending_at_an_agent_is_an_error() {
    let link = r#"{ a = "dcoh.net", b = "mesh.p3", instance = "flexbus" },"#;
    let e = cohet_with(
        r#"{ a = "llc.net", b = "mesh.p2", instance = "llc_link" },
  { a = "dcoh.net", b = "mesh.p3", instance = "flexbus" },"#,
        r#"{ a = "llc.net", b = "mesh.p2", instance = "flexbus" },
  { a = "dcoh.net", b = "mesh.p3", instance = "flexbus" },"#,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("systems.cxl_io.links[3].instance: `flexbus` is a cxl_flexbus, one link, already used by links[2]"),
        "{e}"
    );
    let e = cohet_with(
        link,
        r#"{ a = "mesh.p3", b = "dcoh.net", instance = "flexbus" },"#,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("systems.cxl_io.links[3].a: a cxl_flexbus link's `a` end is the device's agent, but `mesh` is not an agent"),
        "{e}"
    );
}
