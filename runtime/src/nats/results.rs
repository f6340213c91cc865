//! The results bucket: a row's result line, stored once (create-if-absent), so a row
//! handed out twice has one result.

use super::{failed_key, patiently, result_key, Server};
use async_nats::jetstream::kv;
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
) -> Result<bool, String> {
    let line: bytes::Bytes = line(index, id, result).into();
    let key = result_key(batch, index);
    let exists = |e: &kv::CreateError| e.kind() == kv::CreateErrorKind::AlreadyExists;
    match patiently(|| server.results.create(&key, line.clone()), exists).await {
        Ok(_) => {}
        Err(e) if exists(&e) => return Ok(false),
        Err(e) => return Err(format!("cannot store the result: {e}")),
    }
    if result.status != Status::Complete {
        let key = failed_key(batch, index);
        patiently(|| server.results.put(&key, "1".into()), |_| false)
            .await
            .map_err(|e| format!("cannot store the result: {e}"))?;
    }
    Ok(true)
}
