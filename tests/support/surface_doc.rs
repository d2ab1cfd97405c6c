//! `velaris/surface/v2` lists each crate's findings once, in `crates`, and programs refer to
//! them by `id`. Tests that look at one program's crate read it whole through [`inline`].

use serde_json::Value;

/// The document with each program's crate entries completed from `crates` by `id` (the
/// shape tests read: `programs[].crates[].findings`). Panics on a dangling `id`.
pub fn inline(mut doc: Value) -> Value {
    assert_eq!(doc["schema"], "velaris/surface/v2", "{doc:#}");
    let crates: Vec<Value> = doc["crates"].as_array().cloned().unwrap_or_default();
    if let Some(programs) = doc["programs"].as_array_mut() {
        for p in programs {
            for c in p["crates"].as_array_mut().into_iter().flatten() {
                let id = c["id"].clone();
                let full = crates.iter().find(|x| x["id"] == id).unwrap_or_else(|| panic!("no crate with id {id}"));
                for (k, v) in full.as_object().unwrap() {
                    if c.get(k).is_none() {
                        c[k] = v.clone();
                    }
                }
            }
        }
    }
    doc
}
