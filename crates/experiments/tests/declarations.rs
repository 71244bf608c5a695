//! Every workload's declarations: each parameter has a description, a range
//! that fits its kind and the provenance of its default; the defaults pass
//! the ranges and the workload's check.

use ccsim_kernel::component::{check_ranges, ParamDefault, ParamKind, Params};

#[test]
fn every_workload_parameter_is_declared_with_range_and_provenance() {
    for w in ccsim_experiments::workloads() {
        let mut defaults = Params::new();
        for p in w.params {
            let at = format!("{}.{}", w.name, p.name);
            assert!(!p.description.trim().is_empty(), "{at}: no description");
            let numeric = matches!(p.kind, ParamKind::Int | ParamKind::Float);
            assert_eq!(!p.range.is_any(), numeric, "{at}: range fits the kind");
            assert!(
                !matches!(p.default, ParamDefault::Required),
                "{at}: workload parameters have defaults"
            );
            assert!(!p.from.trim().is_empty(), "{at}: no provenance");
            defaults.set(p.name, p.default.value().expect("a default"), "default");
        }
        assert_eq!(check_ranges(w.params, &defaults), Ok(()), "{}", w.name);
        if let Some(check) = w.check {
            assert_eq!(check(&defaults), Ok(()), "{}", w.name);
        }
    }
}
