//! Every registered component type's declarations: each parameter has a
//! description, a range that fits its kind, and (unless required) the
//! provenance of its default, and the defaults themselves are valid.

use ccsim_kernel::component::{ParamDefault, ParamKind, Params, Peers};

#[test]
fn every_parameter_is_declared_with_range_and_provenance() {
    for spec in ccsim_platform::registry() {
        for p in spec.params {
            let at = format!("{}.{}", spec.type_name, p.name);
            assert!(!p.description.trim().is_empty(), "{at}: no description");
            let numeric = matches!(p.kind, ParamKind::Int | ParamKind::Float);
            assert_eq!(
                !p.range.is_any(),
                numeric,
                "{at}: numbers declare a range, other kinds none"
            );
            match p.default {
                ParamDefault::Required => assert!(p.from.is_empty(), "{at}"),
                _ => assert!(!p.from.trim().is_empty(), "{at}: no provenance"),
            }
        }
    }
}

#[test]
fn every_default_is_valid() {
    for spec in ccsim_platform::registry() {
        let mut p = Params::new();
        assert!(p.fill_defaults(spec).is_empty(), "{}", spec.type_name);
        assert_eq!(spec.validate(&p, Peers::NONE), Ok(()), "{}", spec.type_name);
    }
}
