//! Speed comparison of ccsim's explorer with rumur on the same model.
//!
//! [`compare_with_rumur`] takes a reference configuration name (see
//! [`RefModel::by_name`]), finds the Murphi original on disk, applies the
//! configuration's constant edits into a scratch directory, generates C with
//! `rumur --symmetry-reduction off --threads 1 --deadlock-detection off`,
//! compiles it (`cc -std=c11 -O2 … -lpthread` by default), runs the verifier
//! and parses its "N states, M rules fired" line. It then times ccsim's
//! explorer on the Rust port of the same configuration and reports both
//! rates. Both are timed as wall-clock, best of `repetitions` runs; rumur's
//! time is that of the verifier process alone (code generation and C
//! compilation are excluded).
//!
//! The Murphi originals are not in the repository. Point
//! [`BenchOptions::murphi`] (or the environment variable `CCSIM_MURPHI_DIR`)
//! at a file or a directory holding `german_baukus.m` / `cache3.m`; see
//! `REFERENCE.md` in this crate for where to get them.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::refmodels::{self, Original, RefModel};
use crate::{CheckOptions, CheckReport};

/// Environment variable naming a directory (or file) with the Murphi
/// originals.
pub const MURPHI_DIR_ENV: &str = "CCSIM_MURPHI_DIR";

/// Options of [`compare_with_rumur`].
#[derive(Clone, Debug, Serialize)]
pub struct BenchOptions {
    /// The Murphi original: a `.m` file, or a directory containing
    /// `german_baukus.m` / `cache3.m`. `None`: the directory in
    /// `CCSIM_MURPHI_DIR`.
    pub murphi: Option<PathBuf>,
    /// The rumur executable.
    pub rumur: String,
    /// The C compiler.
    pub cc: String,
    /// Optimisation flags for the C compiler (between `-std=c11` and the
    /// sources). Default `-O2`.
    pub cflags: Vec<String>,
    /// Runs of each checker; the best time counts. Default 3.
    pub repetitions: usize,
    /// Scratch directory for the edited model, C file and verifier. `None`:
    /// a fresh directory under the system temp directory.
    pub work_dir: Option<PathBuf>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            murphi: None,
            rumur: "rumur".into(),
            cc: "cc".into(),
            cflags: vec!["-O2".into()],
            repetitions: 3,
            work_dir: None,
        }
    }
}

/// The result of one comparison.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// Configuration name, e.g. `german-4`.
    pub model: String,
    /// The Murphi original used.
    pub murphi_file: PathBuf,
    /// Whether the original's SHA-256 matches the one recorded in
    /// [`Original::sha256`] (if not, counts may legitimately differ).
    pub murphi_sha256_matches: bool,
    /// `rumur --version`.
    pub rumur_version: String,
    /// The rumur command line (flags).
    pub rumur_command: String,
    /// The C compiler command line.
    pub cc_command: String,
    /// States found by ccsim.
    pub states: u64,
    /// Transitions (rules fired) of ccsim.
    pub transitions: u64,
    /// States reported by rumur.
    pub rumur_states: u64,
    /// Rules fired reported by rumur.
    pub rumur_rules_fired: u64,
    /// Whether both counts agree.
    pub counts_match: bool,
    /// Best wall-clock time of ccsim's exploration, seconds.
    pub ccsim_seconds: f64,
    /// Best wall-clock time of the rumur verifier process, seconds.
    pub rumur_seconds: f64,
    /// ccsim states per second.
    pub ccsim_states_per_second: f64,
    /// rumur states per second.
    pub rumur_states_per_second: f64,
    /// ccsim's rate divided by rumur's (above 1: ccsim is faster).
    pub speedup: f64,
    /// Runs per checker.
    pub repetitions: usize,
}

impl BenchReport {
    /// A one-line summary.
    pub fn summary(&self) -> String {
        format!(
            "{}: {} states, {} rules fired (rumur: {} / {}{}); ccsim {:.3} s = {:.0} states/s, \
             rumur {:.3} s = {:.0} states/s; ccsim/rumur speed = {:.2}x",
            self.model,
            self.states,
            self.transitions,
            self.rumur_states,
            self.rumur_rules_fired,
            if self.counts_match {
                ", equal"
            } else {
                ", MISMATCH"
            },
            self.ccsim_seconds,
            self.ccsim_states_per_second,
            self.rumur_seconds,
            self.rumur_states_per_second,
            self.speedup
        )
    }
}

/// Why a comparison could not run.
#[derive(Debug)]
pub enum BenchError {
    /// The name is not a reference configuration.
    UnknownModel(String),
    /// The Murphi original was not found; the message says what to do.
    MurphiMissing(String),
    /// A constant line to edit was not found exactly once in the original.
    EditFailed(String),
    /// rumur, the C compiler or the verifier failed or could not be started.
    Tool(String),
    /// The verifier's output had no "states, rules fired" line.
    Parse(String),
    /// File system error in the scratch directory.
    Io(std::io::Error),
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::UnknownModel(m) => write!(
                f,
                "unknown reference model {m:?} (expected german-N with N = 1..=6, cache3, \
                 cache3-pP, cache3-vV or cache3-pPvV)"
            ),
            BenchError::MurphiMissing(m) => f.write_str(m),
            BenchError::EditFailed(m) => write!(f, "cannot edit the Murphi original: {m}"),
            BenchError::Tool(m) => write!(f, "{m}"),
            BenchError::Parse(m) => write!(f, "cannot parse the rumur verifier's output: {m}"),
            BenchError::Io(e) => write!(f, "I/O error: {e}"),
        }
    }
}

impl std::error::Error for BenchError {}

impl From<std::io::Error> for BenchError {
    fn from(e: std::io::Error) -> Self {
        BenchError::Io(e)
    }
}

/// Which original a model uses and the constant edits that select its
/// configuration.
fn murphi_setup(model: &RefModel) -> (Original, Vec<(String, String)>) {
    match model {
        RefModel::German(g) => (
            Original::GermanBaukus,
            vec![(
                "PROC_NUM : 10;".to_string(),
                format!("PROC_NUM : {};", g.n()),
            )],
        ),
        RefModel::Cache3(c) => {
            let (p, v) = c.params();
            let mut edits = Vec::new();
            if p != 2 {
                edits.push(("ProcCount: 2;".to_string(), format!("ProcCount: {p};")));
            }
            if v != 1 {
                edits.push(("ValueCount: 1;".to_string(), format!("ValueCount: {v};")));
            }
            (Original::Cache3, edits)
        }
    }
}

/// Finds the Murphi original for `original`.
pub fn locate_murphi(original: Original, hint: Option<&Path>) -> Result<PathBuf, BenchError> {
    let env = std::env::var_os(MURPHI_DIR_ENV).map(PathBuf::from);
    let base = hint.map(Path::to_path_buf).or(env);
    let what = format!(
        "the Murphi original {} is needed (from GitHub repository {}, file {}, commit {}). \
         Put it in a directory and pass that directory (or the file) with --murphi, or set \
         {MURPHI_DIR_ENV}=DIR; see crates/check/REFERENCE.md",
        original.file_name(),
        original.repository(),
        original.repo_path(),
        original.commit()
    );
    let Some(base) = base else {
        return Err(BenchError::MurphiMissing(format!(
            "no Murphi file given: {what}"
        )));
    };
    let path = if base.is_dir() {
        base.join(original.file_name())
    } else {
        base
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(BenchError::MurphiMissing(format!(
            "{} does not exist: {what}",
            path.display()
        )))
    }
}

/// Parses rumur's "N states, M rules fired" summary line.
pub fn parse_rumur_output(out: &str) -> Option<(u64, u64)> {
    for line in out.lines().rev() {
        let line = line.trim();
        let Some((states, rest)) = line.split_once(" states, ") else {
            continue;
        };
        let Some((rules, _)) = rest.split_once(" rules fired") else {
            continue;
        };
        if let (Ok(s), Ok(r)) = (states.trim().parse(), rules.trim().parse()) {
            return Some((s, r));
        }
    }
    None
}

fn run(cmd: &mut Command, what: &str) -> Result<String, BenchError> {
    let out = cmd
        .output()
        .map_err(|e| BenchError::Tool(format!("cannot run {what} ({cmd:?}): {e}")))?;
    if !out.status.success() {
        return Err(BenchError::Tool(format!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The rumur flags of the comparison (no symmetry reduction, one thread, no
/// deadlock detection).
pub const RUMUR_BENCH_FLAGS: [&str; 6] = [
    "--symmetry-reduction",
    "off",
    "--threads",
    "1",
    "--deadlock-detection",
    "off",
];

/// Runs rumur and ccsim's explorer on the configuration `model_name` and
/// compares their speed (see the module docs).
pub fn compare_with_rumur(
    model_name: &str,
    options: &BenchOptions,
) -> Result<BenchReport, BenchError> {
    let model = RefModel::by_name(model_name)
        .ok_or_else(|| BenchError::UnknownModel(model_name.to_string()))?;
    let (original, edits) = murphi_setup(&model);
    let src_path = locate_murphi(original, options.murphi.as_deref())?;
    let src = std::fs::read_to_string(&src_path)?;
    let sha = Sha256::digest(src.as_bytes());
    let sha_hex: String = sha.iter().map(|b| format!("{b:02x}")).collect();
    let mut edited = src.clone();
    for (old, new) in &edits {
        let n = edited.matches(old.as_str()).count();
        if n != 1 {
            return Err(BenchError::EditFailed(format!(
                "{old:?} occurs {n} times in {} (expected once)",
                src_path.display()
            )));
        }
        edited = edited.replace(old.as_str(), new);
    }

    let work = match &options.work_dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("ccsim-bench-{}", std::process::id())),
    };
    std::fs::create_dir_all(&work)?;
    let stem = model_name.replace(|c: char| !c.is_ascii_alphanumeric(), "_");
    let m_file = work.join(format!("{stem}.m"));
    let c_file = work.join(format!("{stem}.c"));
    let exe = work.join(&stem);
    std::fs::write(&m_file, edited)?;

    let rumur_version = run(
        Command::new(&options.rumur).arg("--version"),
        "rumur --version",
    )
    .map(|s| s.trim().to_string())
    .map_err(|e| {
        BenchError::Tool(format!(
            "{e}\nrumur is needed for the comparison (Debian: apt-get install rumur)"
        ))
    })?;
    let mut rumur_cmd = Command::new(&options.rumur);
    rumur_cmd
        .args(RUMUR_BENCH_FLAGS)
        .arg("--quiet")
        .arg("--output")
        .arg(&c_file)
        .arg(&m_file);
    run(&mut rumur_cmd, "rumur")?;
    let mut cc_cmd = Command::new(&options.cc);
    cc_cmd
        .arg("-std=c11")
        .args(&options.cflags)
        .arg("-o")
        .arg(&exe)
        .arg(&c_file)
        .arg("-lpthread");
    let cc_command = format!("{cc_cmd:?}");
    run(&mut cc_cmd, "the C compiler")?;

    let reps = options.repetitions.max(1);
    let mut rumur_best = f64::INFINITY;
    let mut rumur_counts = None;
    for _ in 0..reps {
        let t = Instant::now();
        let out = run(&mut Command::new(&exe), "the rumur verifier")?;
        let secs = t.elapsed().as_secs_f64();
        rumur_best = rumur_best.min(secs);
        let counts = parse_rumur_output(&out).ok_or_else(|| {
            BenchError::Parse(out.lines().rev().take(5).collect::<Vec<_>>().join(" | "))
        })?;
        rumur_counts = Some(counts);
    }
    let (rumur_states, rumur_rules_fired) = rumur_counts.expect("at least one repetition");

    let mut ccsim_best = f64::INFINITY;
    let mut last: Option<CheckReport> = None;
    for _ in 0..reps {
        let r = model.check(&CheckOptions::default());
        ccsim_best = ccsim_best.min(r.seconds);
        last = Some(r);
    }
    let r = last.expect("at least one repetition");
    if options.work_dir.is_none() {
        let _ = std::fs::remove_dir_all(&work);
    }

    let ccsim_sps = r.states as f64 / ccsim_best;
    let rumur_sps = rumur_states as f64 / rumur_best;
    Ok(BenchReport {
        model: model_name.to_string(),
        murphi_file: src_path,
        murphi_sha256_matches: sha_hex == original.sha256(),
        rumur_version,
        rumur_command: format!(
            "rumur {} --output {stem}.c {stem}.m",
            RUMUR_BENCH_FLAGS.join(" ")
        ),
        cc_command,
        states: r.states,
        transitions: r.transitions,
        rumur_states,
        rumur_rules_fired,
        counts_match: r.states == rumur_states && r.transitions == rumur_rules_fired,
        ccsim_seconds: ccsim_best,
        rumur_seconds: rumur_best,
        ccsim_states_per_second: ccsim_sps,
        rumur_states_per_second: rumur_sps,
        speedup: ccsim_sps / rumur_sps,
        repetitions: reps,
    })
}

/// The reference configurations' names, for listings.
pub fn reference_names() -> Vec<&'static str> {
    refmodels::REFERENCE_COUNTS.iter().map(|r| r.name).collect()
}
