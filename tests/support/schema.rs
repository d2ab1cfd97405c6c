//! Validation of `velaris deps-diff --format json` documents against the published JSON
//! Schema (docs/deps-diff-v2.schema.json), with every violation listed.
#![allow(dead_code)]

use serde_json::Value;

/// Panics, listing every violation, unless `doc` is valid under the v2 schema.
pub fn assert_valid_v2(doc: &Value) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/deps-diff-v2.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("the schema file")).expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator.iter_errors(doc).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "the document breaks docs/deps-diff-v2.schema.json:\n{}", errors.join("\n"));
}

/// Panics, listing every violation, unless `doc` is valid under the official SARIF 2.1.0
/// schema (tests/sarif/, draft-04).
pub fn assert_valid_sarif(doc: &Value) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sarif/sarif-schema-2.1.0.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("the SARIF schema file")).expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the SARIF schema compiles");
    let errors: Vec<String> = validator.iter_errors(doc).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "the document breaks the SARIF 2.1.0 schema:\n{}", errors.join("\n"));
}
