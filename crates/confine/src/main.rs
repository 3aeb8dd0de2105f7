//! The confinement launcher on its own: `toolgate-confine-launcher __confine POLICY -- PROGRAM…`.
//! toolgate's binary dispatches the same stages; this one exists for the crate's own tests.

fn main() -> std::process::ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let Some((stage, rest)) = args.split_first() else {
        eprintln!("usage: toolgate-confine-launcher __confine POLICY -- PROGRAM [ARGS…]");
        return std::process::ExitCode::from(2);
    };
    let code = toolgate_confine::launcher::main(&stage.to_string_lossy(), rest);
    std::process::ExitCode::from(u8::try_from(code).unwrap_or(255))
}
