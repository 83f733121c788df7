//! Compiles the rate limit service's .proto files (trimmed upstream copies in
//! `proto/`) into Rust with protox, a protobuf compiler written in Rust: no
//! protoc on the build machine. The gRPC server is generated with a client
//! beside it (tests talk to the server through it); the client carries no
//! transport of its own (`build_transport(false)`), so the library needs no
//! client features of tonic.

fn main() {
    let root = "proto";
    println!("cargo:rerun-if-changed={root}");
    let files = ["envoy/service/ratelimit/v3/rls.proto"];
    let descriptors = match protox::compile(files, [root]) {
        Ok(set) => set,
        Err(e) => {
            eprintln!("{root}: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = tonic_build::configure()
        .build_server(true)
        .build_client(true)
        .build_transport(false)
        .compile_fds(descriptors)
    {
        eprintln!("generating the gRPC code: {e}");
        std::process::exit(1);
    }
}
