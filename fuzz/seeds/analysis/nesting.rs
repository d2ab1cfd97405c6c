pub fn f() { let _x = ((((((((1)))))))); }
fn g() -> Option<Option<Option<i32>>> { None }
fn h(x: &&&str) -> bool { !!!x.is_empty() && x.len() + 1 + 2 > 3 }
