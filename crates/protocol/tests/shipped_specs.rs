//! Every `protocols/*.toml` of the repository is shipped: compiled into the
//! crate (so a wheel works without the source tree) under its file stem,
//! byte for byte. A new spec file without an entry in `BUILTIN` fails here.

use std::path::Path;

#[test]
fn every_protocol_file_is_embedded() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../protocols");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("protocols/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let names: Vec<&str> = ccsim_protocol::list_specs()
        .iter()
        .map(|s| s.name)
        .collect();
    for f in &files {
        let stem = f.file_stem().unwrap().to_str().unwrap();
        let text = std::fs::read_to_string(f).unwrap();
        assert_eq!(
            ccsim_protocol::builtin_text(stem),
            Some(text.as_str()),
            "{} is not embedded as {stem:?}",
            f.display()
        );
        assert!(names.contains(&stem), "{stem} is not listed");
    }
    assert_eq!(names.len(), files.len(), "a listed spec has no file");
}
