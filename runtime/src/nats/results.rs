//! The results bucket: a row's result line, stored once (create-if-absent), so a row
//! handed out twice has one result.

use super::{failed_key, patiently, result_key, NatsError, NatsKind, Server};
use serde_json::json;
use tv_vm::result::{Status, TaskResult};

/// A result line, as `tvm batch` writes it.
pub(super) fn line(index: u64, id: &serde_json::Value, result: &TaskResult) -> String {
    let status: Status = result.status;
    json!({"index": index, "id": id, "status": status, "result": result}).to_string()
}

/// Stores row `index`'s result line unless a result is stored already; `false` when
/// one was.
pub(super) async fn store_result(
    server: &Server,
    batch: &str,
    index: u64,
    id: &serde_json::Value,
    result: &TaskResult,
) -> Result<bool, NatsError> {
    let line: bytes::Bytes = line(index, id, result).into();
    let key = result_key(batch, index);
    let unstored = |e: NatsError| e.context("cannot store the result");
    match patiently(|| server.results.create(&key, line.clone())).await {
        Ok(_) => {}
        // Another delivery of the row stored its result first.
        Err(e) if e.kind() == NatsKind::Exists => return Ok(false),
        Err(e) => return Err(unstored(e)),
    }
    if result.status != Status::Complete {
        let key = failed_key(batch, index);
        patiently(|| server.results.put(&key, "1".into()))
            .await
            .map_err(unstored)?;
    }
    Ok(true)
}
