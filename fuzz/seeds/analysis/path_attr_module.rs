#[path = "platform/linux_impl.rs"]
mod imp;

pub fn save() { imp::save() }
