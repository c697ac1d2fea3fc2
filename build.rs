//! Facts about the build machine that decide, at build time, which tests cannot run here. A
//! test that needs what the machine lacks is compiled as `#[ignore = "why"]`, so the test run
//! lists it as ignored with the reason instead of counting a silent early return as a pass.
//! None of them changes what the library or the binary compute.
//!
//! - `pisa_avx2`: this machine has AVX2, POPCNT and BMI1, with which pisa measures text payloads
//!   before simd-json (`parse/measure.rs`); without them that path is never taken.
//! - `pisa_avx512`: it also has AVX-512F and AVX-512BW, with which pisa measures them where the
//!   CPU has them.
//! - `pisa_can_deny_reads`: a test can make a file unreadable to pisa: the tests do not run as
//!   root, or they do and `setpriv` is installed and the process holds `CAP_SETPCAP`, so that
//!   `setpriv` can drop `CAP_DAC_OVERRIDE` (which lets root read a `chmod 000` file).
//!
//! One setting changes how the binary is linked, not what it computes: on Linux with glibc the
//! `pisa` executable is linked at a fixed address (`-no-pie`). As a position-independent
//! executable it started in 8.5 ms, 6 of them the loader's: 129,000 relocations (3 MB of
//! `.rela.dyn` read in) written into 2.5 MB of polars' vtables and other pointers, each of
//! those 620 pages copied on its first write. Linked at a fixed address it has none to apply
//! and starts in 2.4 ms (`perf stat`, 40 runs of `pisa --version`). That is a tenth of a warm
//! report (pisa is run once per report, so the start is paid every time). The cost is that the
//! executable's own code and data are not placed at a random address (the libraries, stack and
//! heap still are); `PISA_PIE=1` at build time keeps the default position-independent link.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    // The sample is compiled into the binary (`include_dir!` in src/demo.rs).
    println!("cargo::rerun-if-changed=datasets/sample");
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rustc-check-cfg=cfg(pisa_avx2)");
    println!("cargo::rustc-check-cfg=cfg(pisa_can_deny_reads)");
    println!("cargo::rustc-check-cfg=cfg(pisa_avx512)");

    #[cfg(target_arch = "x86_64")]
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64")
        && std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("popcnt")
        && std::arch::is_x86_feature_detected!("bmi1")
    {
        println!("cargo::rustc-cfg=pisa_avx2");
        if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512bw") {
            println!("cargo::rustc-cfg=pisa_avx512");
        }
    }

    // The binary alone: tests, benchmarks and the library keep the toolchain's defaults.
    println!("cargo::rerun-if-env-changed=PISA_PIE");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" && std::env::var_os("PISA_PIE").is_none_or(|v| v != "1") {
        println!("cargo::rustc-link-arg-bins=-no-pie");
    }

    if can_deny_reads() {
        println!("cargo::rustc-cfg=pisa_can_deny_reads");
    }
}

/// From `/proc/self/status`: not root, or root with `CAP_SETPCAP` (bit 8) and `setpriv` on the PATH.
fn can_deny_reads() -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.split_whitespace().collect::<Vec<_>>())
    };
    let root = field("Uid:").is_some_and(|ids| ids.get(1) == Some(&"0"));
    if !root {
        return true;
    }
    let setpcap = field("CapEff:")
        .and_then(|v| v.first().and_then(|hex| u64::from_str_radix(hex, 16).ok()))
        .is_some_and(|caps| caps & (1 << 8) != 0);
    let setpriv = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("setpriv").is_file()));
    setpcap && setpriv
}
