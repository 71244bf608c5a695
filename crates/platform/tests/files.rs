//! Loading experiment files from disk: platforms named by a path relative to
//! the experiment file, and which file an error is blamed on. Uses the real
//! component registry (`host_memory` from ccsim-pcie).

use ccsim_kernel::component::*;
use ccsim_platform::{Experiment, WorkloadDecl};

static PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "mode",
    kind: ParamKind::Str,
    default: ParamDefault::Str("latency"),
    unit: "",
    range: ParamRange::ANY,
    from: "test",
    description: "Mode.",
}];

fn workloads() -> Vec<WorkloadDecl> {
    vec![WorkloadDecl {
        name: "probe",
        params: PARAMS,
        check: None,
        metrics: vec!["latency_ns"],
    }]
}

const PLATFORM: &str = r#"
[platform]
name = "mem-only"
description = "one host memory"
[components.mem]
type = "host_memory"
latency_ns = { value = 90.0, from = "assumed" }
"#;

const EXPERIMENT: &str = r#"
[experiment]
name = "probe"
title = "Probe"
x = { name = "bytes" }
sweep = [64]
[[series]]
name = "s"
platform = "PLATFORM"
workload = "probe"
metric = "latency_ns"
"#;

struct Dir(std::path::PathBuf);
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn dir(tag: &str) -> Dir {
    let d = std::env::temp_dir().join(format!("ccsim-platform-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(d.join("platforms")).unwrap();
    Dir(d)
}

#[test]
fn platform_paths_are_relative_to_the_experiment_file() {
    let d = dir("rel");
    std::fs::write(d.0.join("platforms/mem.toml"), PLATFORM).unwrap();
    let exp = d.0.join("probe.toml");
    std::fs::write(&exp, EXPERIMENT.replace("PLATFORM", "platforms/mem.toml")).unwrap();
    let e = Experiment::load(exp.to_str().unwrap(), &workloads()).unwrap();
    assert_eq!(
        e.series[0].platform,
        d.0.join("platforms/mem.toml").to_str().unwrap()
    );
    assert_eq!(
        e.panels.len(),
        1,
        "one panel per metric when none are declared"
    );
    assert_eq!(e.series[0].panel, "latency_ns");
    assert_eq!(e.x.label, "bytes", "the label defaults to the name");
}

#[test]
fn a_broken_platform_is_blamed_on_the_platform_file() {
    let d = dir("broken");
    let bad = PLATFORM.replace("90.0", "\"slow\"");
    std::fs::write(d.0.join("platforms/mem.toml"), bad).unwrap();
    let exp = d.0.join("probe.toml");
    std::fs::write(&exp, EXPERIMENT.replace("PLATFORM", "platforms/mem.toml")).unwrap();
    let err = Experiment::load(exp.to_str().unwrap(), &workloads()).unwrap_err();
    let platform = d.0.join("platforms/mem.toml");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: platform.mem.latency_ns: expected number, got \"slow\"",
            platform.display()
        )
    );
}

#[test]
fn a_missing_platform_is_blamed_on_the_experiment() {
    let d = dir("missing");
    let exp = d.0.join("probe.toml");
    std::fs::write(&exp, EXPERIMENT.replace("PLATFORM", "no-such-platform")).unwrap();
    let err = Experiment::load(exp.to_str().unwrap(), &workloads()).unwrap_err();
    assert_eq!(err.file, exp.to_str().unwrap());
    assert_eq!(err.path, "series[0].platform");
    assert!(
        err.message
            .starts_with("no shipped platform of this name and no such file"),
        "{err}"
    );
}
