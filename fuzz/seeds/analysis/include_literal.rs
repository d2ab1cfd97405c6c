include!("generated/table.rs");

pub fn value() -> usize {
    include!("expr.rs")
}
