//! Text helpers every layer uses: counts for people (`12,345`, `1 package`) and the escaping
//! of attacker-controlled text before it reaches a terminal, a file velaris writes or markdown
//! ([`escape`]).
//!
//! Architecture invariant: this module imports nothing of velaris; every pipeline and renderer
//! may use it, so it stays on the ground floor.

pub mod escape;

/// Group digits of a count in thousands: 12,345.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// "1 package" / "2 packages".
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(999), "999");
        assert_eq!(super::thousands(1000), "1,000");
        assert_eq!(super::thousands(1234567), "1,234,567");
    }

    #[test]
    fn plural() {
        assert_eq!(super::plural(1, "package", "packages"), "1 package");
        assert_eq!(super::plural(1200, "package", "packages"), "1,200 packages");
    }
}
