//! What the runtime's tests share: files and folders, a scripted HTTP server, and
//! OpenAI's published API description.

pub mod files;
pub mod http;
pub mod nats;
pub mod openapi;
pub mod temp;
