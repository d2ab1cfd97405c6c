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

/// A span of time for people, in its largest unit and the next one: `45 minutes`,
/// `3 hours 20 minutes`, `2 days 4 hours`, `5 months`, `2 years 3 months`. Negative spans read
/// as zero.
pub fn age(seconds: i64) -> String {
    let s = seconds.max(0) as u64;
    let (min, hour, day) = (60, 3600, 86_400);
    let (month, year) = (30 * day, 365 * day);
    let two = |a: u64, ua: (&str, &str), b: u64, ub: (&str, &str)| {
        if b == 0 { plural(a, ua.0, ua.1) } else { format!("{} {}", plural(a, ua.0, ua.1), plural(b, ub.0, ub.1)) }
    };
    match s {
        s if s < min => plural(s, "second", "seconds"),
        s if s < hour => plural(s / min, "minute", "minutes"),
        s if s < day => two(s / hour, ("hour", "hours"), s % hour / min, ("minute", "minutes")),
        s if s < month => two(s / day, ("day", "days"), s % day / hour, ("hour", "hours")),
        s if s < year => plural(s / month, "month", "months"),
        s => two(s / year, ("year", "years"), s % year / month, ("month", "months")),
    }
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
    fn age() {
        assert_eq!(super::age(-5), "0 seconds");
        assert_eq!(super::age(59), "59 seconds");
        assert_eq!(super::age(45 * 60 + 10), "45 minutes");
        assert_eq!(super::age(3 * 3600), "3 hours");
        assert_eq!(super::age(3 * 3600 + 20 * 60), "3 hours 20 minutes");
        assert_eq!(super::age(86_400 + 3600), "1 day 1 hour");
        assert_eq!(super::age(6 * 86_400 + 23 * 3600), "6 days 23 hours");
        assert_eq!(super::age(65 * 86_400), "2 months");
        assert_eq!(super::age(800 * 86_400), "2 years 2 months");
    }

    #[test]
    fn plural() {
        assert_eq!(super::plural(1, "package", "packages"), "1 package");
        assert_eq!(super::plural(1200, "package", "packages"), "1,200 packages");
    }
}
