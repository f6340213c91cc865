//! File confinement against a workspace that changes while it is read (DESIGN §18): a
//! folder on the way to a file is swapped, again and again, with a link to a folder
//! outside the workspace holding a file of the same name, while the runtime's context
//! look-up reads the file. A check followed by an open of the path lets some reads
//! through the link; an open beneath the workspace lets none.

use crate::support::temp::TempDir;
use nix::fcntl::{renameat2, RenameFlags, AT_FDCWD};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tv_runtime::context::Assembler;
use tv_vm::bundle::{FilePaths, TaskMeta};
use tv_vm::host::{LlmRequest, Message};

const INSIDE: &str = "the notes inside the workspace";
const OUTSIDE: &str = "the private file outside it";

fn request(path: &str) -> LlmRequest {
    LlmRequest {
        query: None,
        requested_files: Vec::new(),
        task: TaskMeta {
            file_paths: FilePaths::Literal(vec![path.into()]),
            ..TaskMeta::named("t#1")
        }
        .into(),
        system_prompt: String::new(),
        messages: vec![Message::user("read".into())].into(),
        context: Default::default(),
        model: None,
        settings: Default::default(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_swapped_for_a_link_between_check_and_open_never_lets_an_outside_file_be_read() {
    let ws = TempDir::new("race-ws");
    let outside = TempDir::new("race-outside");
    ws.write("sub/notes.txt", INSIDE);
    outside.write("sub/notes.txt", OUTSIDE);
    let (sub, alt) = (ws.path().join("sub"), ws.path().join("alt"));
    std::os::unix::fs::symlink(outside.path().join("sub"), &alt).expect("link");

    // Exchanges the folder and the link atomically, as fast as it can.
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, sub, alt) = (stop.clone(), sub.clone(), alt.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                renameat2(AT_FDCWD, &sub, AT_FDCWD, &alt, RenameFlags::RENAME_EXCHANGE)
                    .expect("exchange");
                swaps += 1;
            }
            swaps
        })
    };
    let assembler = Assembler {
        workspace: Some(ws.path().to_path_buf()),
        ..Assembler::default()
    };
    let req = request("sub/notes.txt");
    let (mut inside, mut reads, started) = (0, 0, Instant::now());
    while reads < 4000 && started.elapsed() < Duration::from_secs(20) {
        let out = assembler.assemble(&req).await;
        reads += 1;
        assert!(
            !out.text.contains(OUTSIDE),
            "read {reads} returned the outside file: {out:?}"
        );
        inside += usize::from(out.text.contains(INSIDE));
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().expect("the swapper ends");
    assert!(swaps > 100, "the folder was swapped only {swaps} times");
    assert!(inside > 0, "no read of {reads} found the file inside");
}
