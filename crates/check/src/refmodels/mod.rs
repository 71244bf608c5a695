//! External reference models: public Murphi models re-implemented in Rust
//! against [`Model`](crate::Model), with the reachable-state counts that
//! rumur reports for the Murphi originals.
//!
//! The Murphi sources are not part of this repository; `REFERENCE.md` in this
//! crate says where they come from and how the counts were produced. Tests
//! (`tests/reference_counts.rs`) assert that ccsim's explorer finds exactly
//! rumur's number of states *and* of rules fired on each configuration, which
//! checks both the explorer and the faithfulness of the Rust ports.
//!
//! - [`german`]: German's protocol after Cubicle's `german_baukus.m`.
//! - [`cache3`]: CMurphi's `cache3.m` directory protocol on an unordered
//!   network.

pub mod cache3;
pub mod german;

pub use cache3::Cache3;
pub use german::German;

/// Which Murphi original a reference configuration comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Original {
    /// `examples/murphi/german_baukus.m` of `cubicle-model-checker/cubicle`.
    GermanBaukus,
    /// `ex/others/cache3.m` of `melver/cmurphi` (CMurphi 5.x).
    Cache3,
}

impl Original {
    /// File name of the Murphi original.
    pub fn file_name(self) -> &'static str {
        match self {
            Original::GermanBaukus => "german_baukus.m",
            Original::Cache3 => "cache3.m",
        }
    }
    /// Path of the original in its repository.
    pub fn repo_path(self) -> &'static str {
        match self {
            Original::GermanBaukus => "examples/murphi/german_baukus.m",
            Original::Cache3 => "ex/others/cache3.m",
        }
    }
    /// GitHub repository (`owner/name`) the original was taken from.
    pub fn repository(self) -> &'static str {
        match self {
            Original::GermanBaukus => "cubicle-model-checker/cubicle",
            Original::Cache3 => "melver/cmurphi",
        }
    }
    /// The commit the file was read at.
    pub fn commit(self) -> &'static str {
        match self {
            Original::GermanBaukus => "3f7613542898174cc297d497d2b4b385fce813bd",
            Original::Cache3 => "5d4a4267884277f52c4a1503bb3e3b83d0ae3855",
        }
    }
    /// SHA-256 of the unmodified file.
    pub fn sha256(self) -> &'static str {
        match self {
            Original::GermanBaukus => {
                "941f70a5156063c312021f91afca83901342688d186f2e8d9ebdef11e2239932"
            }
            Original::Cache3 => "e977c9ed7b53463b645849e1017e3dd11c4cfc13b7d47f8ae699076c5fc122bc",
        }
    }
}

/// The rumur version the counts were produced with (Debian package `rumur`).
pub const RUMUR_VERSION: &str = "Rumur v2022.08.20-1 (Debian package rumur)";

/// The rumur flags used for every count: no symmetry reduction (so every
/// scalarset permutation is a distinct state, as in ccsim), one thread,
/// deadlock detection off (so that a deadlock does not stop the count; the
/// deadlock verdicts in [`ReferenceCount::deadlock`] come from separate runs
/// with `--deadlock-detection stuck`).
pub const RUMUR_FLAGS: &str = "--symmetry-reduction off --threads 1 --deadlock-detection off";

/// A configuration of a reference model and rumur's figures for it.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct ReferenceCount {
    /// ccsim's name of the configuration (see [`RefModel::by_name`]).
    pub name: &'static str,
    /// The Murphi original.
    pub original: Original,
    /// The constant edits applied to the original (`(old line text, new
    /// line text)`), empty for the file as published.
    pub edits: &'static [(&'static str, &'static str)],
    /// Reachable states reported by rumur ("N states").
    pub states: u64,
    /// Rules fired reported by rumur ("M rules fired").
    pub rules_fired: u64,
    /// Whether rumur with `--deadlock-detection stuck` (otherwise the same
    /// flags) reports a deadlock: a reachable state with no enabled rule.
    pub deadlock: bool,
    /// Whether the configuration is small enough for the default test run
    /// (larger ones are `#[ignore]`d tests).
    pub quick: bool,
}

const GERMAN_N: &str = "PROC_NUM : 10;";
const CACHE3_PROCS: &str = "ProcCount: 2;";
const CACHE3_VALUES: &str = "ValueCount: 1;";

/// rumur's counts for the Murphi originals (tool and flags:
/// [`RUMUR_VERSION`], [`RUMUR_FLAGS`]; provenance of the files:
/// [`Original`]). All runs ended with "No error found".
pub const REFERENCE_COUNTS: &[ReferenceCount] = &[
    ReferenceCount {
        name: "german-1",
        original: Original::GermanBaukus,
        edits: &[(GERMAN_N, "PROC_NUM : 1;")],
        states: 73,
        rules_fired: 107,
        deadlock: true,
        quick: true,
    },
    ReferenceCount {
        name: "german-2",
        original: Original::GermanBaukus,
        edits: &[(GERMAN_N, "PROC_NUM : 2;")],
        states: 1_506,
        rules_fired: 3_996,
        deadlock: false,
        quick: true,
    },
    ReferenceCount {
        name: "german-3",
        original: Original::GermanBaukus,
        edits: &[(GERMAN_N, "PROC_NUM : 3;")],
        states: 28_647,
        rules_fired: 115_020,
        deadlock: false,
        quick: true,
    },
    ReferenceCount {
        name: "german-4",
        original: Original::GermanBaukus,
        edits: &[(GERMAN_N, "PROC_NUM : 4;")],
        states: 566_892,
        rules_fired: 3_054_672,
        deadlock: false,
        quick: true,
    },
    ReferenceCount {
        name: "german-5",
        original: Original::GermanBaukus,
        edits: &[(GERMAN_N, "PROC_NUM : 5;")],
        states: 11_359_845,
        rules_fired: 76_470_480,
        deadlock: false,
        quick: false,
    },
    ReferenceCount {
        name: "cache3",
        original: Original::Cache3,
        edits: &[],
        states: 577,
        rules_fired: 2_440,
        deadlock: false,
        quick: true,
    },
    ReferenceCount {
        name: "cache3-p1",
        original: Original::Cache3,
        edits: &[(CACHE3_PROCS, "ProcCount: 1;")],
        states: 13,
        rules_fired: 21,
        deadlock: false,
        quick: true,
    },
    ReferenceCount {
        name: "cache3-v2",
        original: Original::Cache3,
        edits: &[(CACHE3_VALUES, "ValueCount: 2;")],
        states: 2_739,
        rules_fired: 11_666,
        deadlock: false,
        quick: true,
    },
    ReferenceCount {
        name: "cache3-p3",
        original: Original::Cache3,
        edits: &[(CACHE3_PROCS, "ProcCount: 3;")],
        states: 15_703,
        rules_fired: 79_505,
        deadlock: false,
        quick: true,
    },
    ReferenceCount {
        name: "cache3-p3v2",
        original: Original::Cache3,
        edits: &[
            (CACHE3_PROCS, "ProcCount: 3;"),
            (CACHE3_VALUES, "ValueCount: 2;"),
        ],
        states: 127_231,
        rules_fired: 654_490,
        deadlock: false,
        quick: true,
    },
];

/// A reference model configuration, ready to check.
#[derive(Clone, Debug)]
pub enum RefModel {
    /// German's protocol.
    German(German),
    /// `cache3`.
    Cache3(Cache3),
}

impl RefModel {
    /// The model for a configuration name: `german-N` (N = 1..=6),
    /// `cache3` (the original: 2 processors, 1 value), or
    /// `cache3-pP`, `cache3-vV`, `cache3-pPvV` (P = 1..=4 processors,
    /// V = 1..=4 values). `None` for anything else.
    pub fn by_name(name: &str) -> Option<RefModel> {
        if let Some(n) = name.strip_prefix("german-") {
            let n: usize = n.parse().ok()?;
            return (1..=german::MAX_CLIENTS)
                .contains(&n)
                .then(|| RefModel::German(German::new(n)));
        }
        let params = match name.strip_prefix("cache3")? {
            "" => "",
            r => r.strip_prefix('-').filter(|p| !p.is_empty())?,
        };
        let (mut procs, mut values) = (2usize, 1usize);
        let mut rest = params;
        if let Some(r) = rest.strip_prefix('p') {
            let end = r.find('v').unwrap_or(r.len());
            procs = r[..end].parse().ok()?;
            rest = &r[end..];
        }
        if let Some(r) = rest.strip_prefix('v') {
            values = r.parse().ok()?;
            rest = "";
        }
        if !rest.is_empty()
            || !(1..=cache3::MAX_PROCS).contains(&procs)
            || !(1..=cache3::MAX_VALUES).contains(&values)
        {
            return None;
        }
        Some(RefModel::Cache3(Cache3::with_params(procs, values)))
    }

    /// Explores the model with [`crate::check`].
    pub fn check(&self, options: &crate::CheckOptions) -> crate::CheckReport {
        match self {
            RefModel::German(m) => crate::check(m, options),
            RefModel::Cache3(m) => crate::check(m, options),
        }
    }
}

/// The reference count recorded for a configuration name, if any.
pub fn reference_count(name: &str) -> Option<&'static ReferenceCount> {
    REFERENCE_COUNTS.iter().find(|r| r.name == name)
}
