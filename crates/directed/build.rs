//! Give the C library a SONAME, so that a program linked against
//! `liboutrider_directed.so` records that name (not a build path) as its
//! dependency and finds the library through the usual search path.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,liboutrider_directed.so");
    }
}
