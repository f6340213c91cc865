//! The reply cache (`--cache DIR`) around real calls: an entry that cannot be used and a
//! reply that cannot be stored are warnings on the reply, and the call is made.

use super::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tv_runtime::cache::ReplyCache;
use tv_runtime::ledger::Ledger;
use tv_runtime::prices::Prices;
use tv_test_support::temp::TempDir;

/// A client of `api` whose calls go through a reply cache in `dir`, as a new run's do.
fn cached(api: Api, server: &Server, dir: &Path) -> Client {
    let ledger = Ledger {
        prices: Prices::builtin(),
        budget: None,
        cache: Some(ReplyCache::open(dir).expect("the cache opens")),
        shared: None,
    };
    let ledger = Some(Arc::new(ledger));
    let settings = api.settings(server);
    match api {
        Api::OpenAi => Client::OpenAi(OpenAi::new(settings).unwrap().with_ledger(ledger)),
        Api::Anthropic => Client::Anthropic(Anthropic::new(settings).unwrap().with_ledger(ledger)),
    }
}

/// The one entry the cache in `dir` holds.
fn only_entry(dir: &Path) -> PathBuf {
    let mut found = Vec::new();
    for shard in std::fs::read_dir(dir.join("v1")).unwrap().flatten() {
        found.extend(
            std::fs::read_dir(shard.path())
                .unwrap()
                .flatten()
                .map(|e| e.path()),
        );
    }
    assert_eq!(found.len(), 1, "{found:?}");
    found.remove(0)
}

#[tokio::test]
async fn a_damaged_entry_is_a_warning_and_its_request_is_sent_again() {
    both(|api| async move {
        let dir = TempDir::new(&format!("reply-cache-damaged-{}", api.name()));
        let server = Server::scripted(vec![api.ok("first", 2, 3), api.ok("again", 2, 3)]).await;
        let first = cached(api, &server, dir.path()).complete(&request(None)).await;
        assert!(first.unwrap().warnings.is_empty(), "{api:?}");
        let entry = only_entry(dir.path());
        std::fs::write(&entry, "{not json").unwrap();
        let again = cached(api, &server, dir.path()).complete(&request(None)).await;
        let again = again.unwrap();
        assert_eq!((server.hits(), again.content.as_str()), (2, "again"), "{api:?}");
        let damaged = format!(
            "the reply cache entry {} is damaged: it is not an entry of this cache's version 1 layout",
            entry.display()
        );
        assert_eq!(again.warnings, [damaged], "{api:?}");
        // Stored again, whole: a third run is answered from it.
        let third = cached(api, &server, dir.path()).complete(&request(None)).await;
        let third = third.unwrap();
        assert!(third.cached && third.warnings.is_empty(), "{api:?}");
        assert_eq!((server.hits(), third.content.as_str()), (2, "again"));
    })
    .await;
}

#[tokio::test]
async fn a_reply_that_cannot_be_stored_is_a_warning_and_still_the_answer() {
    both(|api| async move {
        let dir = TempDir::new(&format!("reply-cache-unwritable-{}", api.name()));
        let server = Server::scripted(vec![api.ok("first", 2, 3), api.ok("again", 2, 3)]).await;
        let first = cached(api, &server, dir.path()).complete(&request(None)).await;
        assert!(first.unwrap().warnings.is_empty(), "{api:?}");
        // The entry's folder becomes a file: the entry can be neither read nor written.
        let entry = only_entry(dir.path());
        let folder = entry.parent().unwrap().to_path_buf();
        std::fs::remove_dir_all(&folder).unwrap();
        std::fs::write(&folder, "in the way").unwrap();
        let again = cached(api, &server, dir.path()).complete(&request(None)).await;
        let again = again.unwrap();
        assert_eq!((server.hits(), again.content.as_str()), (2, "again"), "{api:?}");
        let unread = format!(
            "the reply cache entry {} is damaged: it cannot be read: Not a directory (os error 20)",
            entry.display()
        );
        let unstored = format!(
            "the reply could not be cached: cannot create the cache folder {}: File exists (os error 17)",
            folder.display()
        );
        assert_eq!(again.warnings, [unread, unstored], "{api:?}");
    })
    .await;
}
