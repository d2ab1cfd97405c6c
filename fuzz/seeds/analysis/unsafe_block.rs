pub unsafe fn raw(p: *const u8) -> u8 {
    unsafe { *p }
}

pub struct S(*mut u8);
unsafe impl Send for S {}

pub unsafe trait Marker {}
