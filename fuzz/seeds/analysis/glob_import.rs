use std::fs::*;

pub fn save(p: &str) -> String {
    write(p, b"x").unwrap();
    let s = String::new();
    s
}
