cfg_if::cfg_if! {
    if #[cfg(windows)] {
        pub fn run() { std::process::Command::new("cmd").spawn().unwrap(); }
    } else if #[cfg(unix)] {
        pub fn run() { std::fs::write("a", "b").unwrap(); }
        mod unix_only;
    } else {
        pub fn run() { std::env::var("X").unwrap(); }
    }
}

pub fn nested() {
    cfg_if::cfg_if! {
        if #[cfg(feature = "never")] {
            std::env::set_var("A", "B");
        } else {
            fn inner() { let _ = std::env::current_dir(); }
            inner();
        }
    }
}
