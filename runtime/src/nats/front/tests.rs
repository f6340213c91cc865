use super::*;
use crate::config::env::Vars;
use crate::config::{CacheChoice, Calls, Cost, Models, ProviderPart};
use crate::host::Choice;

fn environment(vars: &[(&str, &str, Source)]) -> Environment {
    let mut v = Vars::default();
    for (name, value, source) in vars {
        v.insert(name, value.to_string(), *source);
    }
    Environment::of(v)
}

#[test]
fn the_flags_sign_in_over_the_environment_and_a_dotenv_signs_in_to_nothing() {
    let env = environment(&[
        ("NATS_CREDS", "/env/user.creds", Source::Environment),
        ("NATS_USER", "env-user", Source::Environment),
        ("NATS_CA", "", Source::Environment),
        ("NATS_CERT", "/env/cert.pem", Source::Environment),
        ("NATS_TOKEN", "env-token", Source::Environment),
        ("NATS_KEY", "/dotenv/key.pem", Source::DotEnv { line: 1 }),
    ]);
    let flags = Connect {
        user: Some("flag-user".into()),
        ..Connect::new("nats://127.0.0.1:4222")
    };
    let c = flags.or_environment(&env);
    assert_eq!(c.url, "nats://127.0.0.1:4222");
    assert_eq!(c.user.as_deref(), Some("flag-user"), "the flag's");
    assert_eq!(c.creds, Some(PathBuf::from("/env/user.creds")));
    assert_eq!(c.cert, Some(PathBuf::from("/env/cert.pem")));
    assert_eq!(c.token.as_deref(), Some("env-token"));
    assert_eq!(c.ca, None, "an empty variable is none");
    assert_eq!(c.key, None, "never from a .env");
    assert_eq!(c.password, None);
}

/// A published batch's name is a hash of its record: the same batch published by
/// another tvm of this format must get the same name, so the record's JSON is pinned.
#[test]
fn an_unnamed_batch_is_named_by_the_hash_of_its_record() {
    let mut config = RunConfig::defaults();
    config.models.default = Some("gpt-4o-mini".into());
    config.calls.concurrency = Some(4);
    config.calls.retries = Some(9);
    config.cost.max_cost = Some(2_000_000_000_000);
    config.cost.cache = Some(CacheChoice::Dir("/cache".into()));
    let publishing = |name| Publishing {
        bundle_sha256: "ab12",
        entry: "summarize",
        config: &config,
        survey: Survey {
            rows: 3,
            sha256: "cd34".into(),
        },
        max_deliveries: None,
        name,
    };
    let r = record(publishing(None)).expect("a record");
    assert_eq!(r.header.bundle, PathBuf::from("nats:tvm_bundles/ab12"));
    assert_eq!((r.calls, r.max_deliveries, r.rows), (4, 3, 3));
    assert_eq!(r.header.config.calls.retries, None, "each worker's own");
    assert_eq!(r.header.config.cost.cache, None, "each worker's own");
    assert_eq!(r.header.config.cost.max_cost, Some(2_000_000_000_000));
    let mut unnamed = r.clone();
    unnamed.batch = String::new();
    let text = serde_json::to_string(&unnamed).expect("JSON");
    assert_eq!(r.batch, crate::digest::sha256_hex(text.as_bytes())[..12]);
    assert_eq!(r.batch, PINNED_NAME, "{text}");
    let named = record(publishing(Some("nightly-1"))).expect("a record");
    assert_eq!(named.batch, "nightly-1");
    let e = record(publishing(Some("a.b"))).expect_err("refused");
    assert_eq!(e.kind(), NatsKind::Record);
    let why = "`a.b` is not a batch name: use 1 to 64 letters, digits, `-` or `_`";
    assert_eq!(e.to_string(), why);
}

/// The name [`an_unnamed_batch_is_named_by_the_hash_of_its_record`]'s batch has had
/// since journal format 2.
const PINNED_NAME: &str = "70f32d032231";

#[test]
fn a_workers_rows_take_the_batchs_result_settings_and_the_workers_own_provider_and_cache() {
    let worker = RunConfig {
        provider: ProviderPart {
            choice: Some(Choice::Echo),
            cassette: None,
        },
        models: Models {
            default: Some("worker-model".into()),
            force: Some("openai:worker".into()),
        },
        calls: Calls {
            concurrency: Some(8),
            retries: Some(9),
            ..Calls::default()
        },
        cost: Cost {
            max_cost: Some(5),
            cache: Some(CacheChoice::Dir("/worker/cache".into())),
            ..Cost::default()
        },
        ..RunConfig::defaults()
    };
    let mut published = RunConfig::defaults();
    published.models.default = Some("batch-model".into());
    published.calls.retries = Some(0);
    published.cost.max_cost = Some(1);
    let record = BatchRecord {
        batch: "b".into(),
        rows: 1,
        rows_sha256: String::new(),
        header: Header {
            journal: FORMAT,
            bundle: PathBuf::new(),
            bundle_sha256: String::new(),
            entry: "main".into(),
            args: serde_json::Map::new(),
            config: published,
        },
        calls: 3,
        max_deliveries: 3,
    };
    let c = batch_settings(&worker, 8, &record);
    assert_eq!(c.models.default.as_deref(), Some("batch-model"));
    // The batch named no forced model: the worker's stays.
    assert_eq!(c.models.force.as_deref(), Some("openai:worker"));
    assert_eq!(c.provider.choice, Some(Choice::Echo));
    assert_eq!(c.calls.retries, Some(9), "retries are the worker's");
    assert_eq!(c.calls.concurrency, Some(3), "the fewer calls in flight");
    assert_eq!(c.cost.max_cost, None, "the budget is kept in the server");
    assert_eq!(c.cost.cache, worker.cost.cache);
    assert_eq!(
        batch_settings(&worker, 2, &record).calls.concurrency,
        Some(2)
    );
}
