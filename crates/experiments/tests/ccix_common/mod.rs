//! Set-ups the CCIX test files share: workload parameters from strings and
//! a system of the N1-SDP platform built for a test.

#![allow(dead_code)] // each test file uses part of it

use ccsim_kernel::prelude::*;
use ccsim_platform::{BuildOptions, BuiltSystem, Platform};

/// Workload parameters from (name, value) strings: whole numbers as
/// integers, anything else as a string.
pub fn params_of(settings: &[(&str, &str)]) -> Params {
    let mut params = Params::new();
    for (k, v) in settings {
        let value = match v.parse::<i64>() {
            Ok(i) => ParamValue::Int(i),
            Err(_) => ParamValue::Str((*v).into()),
        };
        params.set(k, value, "test");
    }
    params
}

/// `system` of platform `p`, seed 0, trace off, online checks on.
pub fn build(p: &Platform, system: &str) -> BuiltSystem {
    p.build(
        system,
        BuildOptions {
            seed: 0,
            trace: TraceMode::Off,
            checks: true,
            tester: None,
        },
    )
    .unwrap()
}
