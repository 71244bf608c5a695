//! Loading an experiment parses its file and each platform file once, and
//! keeps the validated platforms (one test in its own binary: the parse
//! counters are per process).

use ccsim_kernel::component::ParamValue;
use ccsim_platform::{parse_counts, Experiment, WorkloadDecl};

#[test]
fn an_experiment_parses_each_file_once_and_keeps_its_platforms() {
    let decls = vec![WorkloadDecl {
        name: "dma_read",
        params: &[],
        check: None,
        metrics: vec!["latency_ns", "bandwidth_gbps"],
    }];
    let text = r#"
[experiment]
name = "two-on-one"
title = "two series on one platform"
x = { name = "message_bytes" }
sweep = [64]

[[series]]
name = "a"
platform = "cohet"
workload = "dma_read"
metric = "latency_ns"

[[series]]
name = "b"
platform = "cohet"
workload = "dma_read"
metric = "bandwidth_gbps"
"#;
    let dir = std::env::temp_dir().join(format!("ccsim-parse-once-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("two.toml");
    std::fs::write(&path, text).unwrap();
    let before = parse_counts();
    let e = Experiment::load(path.to_str().unwrap(), &decls).unwrap();
    let after = parse_counts();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(after.experiments - before.experiments, 1);
    assert_eq!(
        after.platforms - before.platforms,
        1,
        "cohet parsed once for two series"
    );
    assert_eq!(e.platforms.keys().collect::<Vec<_>>(), ["cohet"]);
    // Points use the kept platform; overrides apply to a copy.
    let cohet = e.platform("cohet").unwrap();
    let x8 = cohet
        .with_all_overrides(&[], &[("pcie.lanes".into(), "8".into())])
        .unwrap();
    assert_eq!(x8.component("pcie").unwrap().params.int("lanes"), 8);
    assert_eq!(
        cohet
            .component("pcie")
            .unwrap()
            .params
            .get("lanes")
            .unwrap()
            .0,
        ParamValue::Int(16)
    );
    assert_eq!(
        parse_counts(),
        after,
        "nothing parsed for points and overrides"
    );
    assert!(e.platform("enzian").is_err());
}
