fn apply(f: fn(&str) -> std::io::Result<()>, p: &str) {
    let _ = f(p);
}

pub fn clean(p: &str) {
    let f = std::fs::write;
    let _ = f(p, b"x");
    apply(std::fs::remove_file, p);
}
