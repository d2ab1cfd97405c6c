use std::os::raw::{c_char, c_int};

extern "C" {
    pub fn system(command: *const c_char) -> c_int;
}
