//! The messages and service of Envoy's rate limit service protocol
//! (`envoy.service.ratelimit.v3`), generated at build time from the trimmed
//! upstream .proto files in `crates/limits-server/proto` (see `build.rs`).
//! The module tree mirrors the protobuf packages, as the generated code
//! refers to its neighbours by relative paths.

#![allow(missing_docs, clippy::all, clippy::pedantic)]

/// `envoy.*`
pub mod envoy {
    /// `envoy.service.*`
    pub mod service {
        /// `envoy.service.ratelimit.*`
        pub mod ratelimit {
            /// `envoy.service.ratelimit.v3`: the service, its request and response.
            pub mod v3 {
                tonic::include_proto!("envoy.service.ratelimit.v3");
            }
        }
    }
    /// `envoy.extensions.*`
    pub mod extensions {
        /// `envoy.extensions.common.*`
        pub mod common {
            /// `envoy.extensions.common.ratelimit.*`
            pub mod ratelimit {
                /// `envoy.extensions.common.ratelimit.v3`: the descriptor.
                pub mod v3 {
                    tonic::include_proto!("envoy.extensions.common.ratelimit.v3");
                }
            }
        }
    }
    /// `envoy.config.*`
    pub mod config {
        /// `envoy.config.core.*`
        pub mod core {
            /// `envoy.config.core.v3`: the header value.
            pub mod v3 {
                tonic::include_proto!("envoy.config.core.v3");
            }
        }
    }
    /// `envoy.type.*`
    pub mod r#type {
        /// `envoy.type.v3`: the rate limit unit of an override.
        pub mod v3 {
            tonic::include_proto!("envoy.r#type.v3");
        }
    }
}

pub use envoy::config::core::v3::HeaderValue;
pub use envoy::extensions::common::ratelimit::v3::{rate_limit_descriptor, RateLimitDescriptor};
pub use envoy::service::ratelimit::v3::{
    rate_limit_response, rate_limit_service_client, rate_limit_service_server, RateLimitRequest,
    RateLimitResponse,
};
