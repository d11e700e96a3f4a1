// Records which cargo profile built the library, so Python (and the benchmarks) can refuse a debug build.
fn main() {
    let out_dir = std::env::var("OUT_DIR").unwrap_or_default();
    // OUT_DIR is <target>/<profile>/build/<pkg>-<hash>/out
    let profile = std::path::Path::new(&out_dir)
        .ancestors()
        .nth(3)
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .unwrap_or("unknown")
        .to_string();
    println!("cargo:rustc-env=CTXFAST_BUILD_PROFILE={profile}");
    println!("cargo:rerun-if-changed=build.rs");
}
