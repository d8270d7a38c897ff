//! The JSON documents the tests see, validated against the committed schemas
//! (`docs/schema/<kind>.schema.json`, JSON Schema draft 2020-12) by the `jsonschema` crate:
//! shared by the integration tests (every run of the binary, `util::run`) and the corpus tests.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

/// The committed schema of `kind` (`snapshot`, `check`, …).
pub fn schema_path(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schema").join(format!("{kind}.schema.json"))
}

/// A validator per committed schema, compiled once.
fn validators() -> &'static BTreeMap<String, jsonschema::Validator> {
    static VALIDATORS: OnceLock<BTreeMap<String, jsonschema::Validator>> = OnceLock::new();
    VALIDATORS.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schema");
        let mut out = BTreeMap::new();
        for entry in std::fs::read_dir(&dir).expect("docs/schema/") {
            let path = entry.expect("a schema file").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            let Some(kind) = name.strip_suffix(".schema.json") else { continue };
            let text = std::fs::read_to_string(&path).expect("a schema file");
            let schema: Value = serde_json::from_str(&text).expect("a schema is JSON");
            let v = jsonschema::draft202012::new(&schema)
                .unwrap_or_else(|e| panic!("{}: not a valid schema: {e}", path.display()));
            out.insert(kind.to_string(), v);
        }
        out
    })
}

/// Every way `doc` breaks the schema of `kind`: instance path and error, one a line.
pub fn errors(kind: &str, doc: &Value) -> Vec<String> {
    let v = validators()
        .get(kind)
        .unwrap_or_else(|| panic!("no committed schema {}", schema_path(kind).display()));
    v.iter_errors(doc).map(|e| format!("at {:?}: {e}", e.instance_path().as_str())).collect()
}

/// Fails, naming `what` (the command, the file) and every error, unless `doc` is a valid
/// document of `kind`.
#[track_caller]
pub fn expect_valid(kind: &str, doc: &Value, what: &str) {
    let errors = errors(kind, doc);
    assert!(
        errors.is_empty(),
        "{what}: not a valid {kind} document (docs/schema/{kind}.schema.json):\n{}",
        errors.iter().take(10).map(String::as_str).collect::<Vec<_>>().join("\n")
    );
}

/// [`expect_valid`] for a document's text.
#[track_caller]
pub fn expect_valid_text(kind: &str, text: &str, what: &str) {
    let doc: Value = serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("{what}: a {kind} document that is not JSON: {e}"));
    expect_valid(kind, &doc, what);
}
