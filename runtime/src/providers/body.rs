//! Reading a reply's body within a cap (DESIGN §18): a server, or anything between tvm
//! and it, can send an endless body; reading it whole would take all the memory there is
//! within seconds. Bodies are read chunk by chunk and the reading stops past the cap.

/// What a call whose reply passed the cap fails with; a cassette's reply over the cap
/// fails its call with the same words, so a replay is no way around the cap.
pub(crate) fn too_large(cap: usize) -> String {
    format!("the reply is larger than the limit of {cap} bytes (--max-reply-bytes); reading stopped there")
}

/// Bytes read of an error reply: its excerpt shows 200 characters, the rest is noise.
pub(super) const ERROR_BODY_BYTES: usize = 64 << 10;

/// What reading a body gave.
pub(super) enum Body {
    /// The whole body.
    Whole(Vec<u8>),
    /// The body passed the cap; what was read of it, up to the cap.
    Cut(Vec<u8>),
}

/// Reads `response`'s body, stopping once it has more than `cap` bytes. A declared
/// length over the cap is refused before anything is read.
pub(super) async fn read_body(
    mut response: reqwest::Response,
    cap: usize,
) -> Result<Body, reqwest::Error> {
    if response.content_length().is_some_and(|n| n > cap as u64) {
        return Ok(Body::Cut(Vec::new()));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = cap - bytes.len();
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            // Dropping the response closes the connection: nothing more is read.
            return Ok(Body::Cut(bytes));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Body::Whole(bytes))
}
