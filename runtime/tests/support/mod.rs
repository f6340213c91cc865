//! What the runtime's tests share: folders, a scripted HTTP server, and OpenAI's
//! published API description (the command line's tests include these files by path).

pub mod http;
pub mod openapi;
pub mod temp;
