//! Embeds every `platforms/*.toml` and `experiments/*.toml` of the repository
//! into the crate, so shipped configs work after `pip install` without the
//! source tree. Adding a file needs no code change: this script lists the
//! directories and generates one `include_str!` per file, sorted by name.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn embed(out: &mut String, konst: &str, dir: &Path) {
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    writeln!(
        out,
        "/// Shipped files: (name, repository-relative label, text)."
    )
    .unwrap();
    writeln!(out, "pub static {konst}: &[(&str, &str, &str)] = &[").unwrap();
    let dir_name = dir.file_name().unwrap().to_string_lossy().to_string();
    for f in files {
        println!("cargo:rerun-if-changed={}", f.display());
        let stem = f.file_stem().unwrap().to_string_lossy().to_string();
        let file = f.file_name().unwrap().to_string_lossy().to_string();
        let abs = f.canonicalize().unwrap();
        writeln!(
            out,
            "    ({stem:?}, \"{dir_name}/{file}\", include_str!({:?})),",
            abs.display().to_string()
        )
        .unwrap();
    }
    writeln!(out, "];").unwrap();
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.join("../..");
    let mut out = String::new();
    embed(&mut out, "PLATFORM_FILES", &root.join("platforms"));
    embed(&mut out, "EXPERIMENT_FILES", &root.join("experiments"));
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("embedded.rs");
    std::fs::write(dest, out).unwrap();
}
