use super::*;
use env::DotEnvBounds;
use serde_json::{Map, Value};
use tv_stdlib::models::Provider;

/// A config with every field set, the values told apart by `n`.
fn full(n: u64) -> RunConfig {
    let path = |s: &str| PathBuf::from(format!("/{s}{n}"));
    RunConfig {
        provider: ProviderPart {
            choice: Some(if n == 1 {
                Choice::Echo
            } else {
                Choice::Remote(Provider::OpenAi)
            }),
            cassette: Some(path("cassette")),
        },
        models: Models {
            default: Some(format!("m{n}")),
            force: Some(format!("openai:f{n}")),
        },
        sampling: Sampling {
            temperature: Some(n as f64 / 10.0),
            max_tokens: Some(n),
            seed: Some(n as i64),
        },
        json_mode: Some(if n == 1 {
            JsonMode::Native
        } else {
            JsonMode::Prompt
        }),
        calls: Calls {
            concurrency: Some(n as usize),
            retries: Some(n as u32),
            request_timeout_secs: Some(n),
            rate_wait_secs: Some(n),
            max_reply_bytes: Some(n),
        },
        context: ContextPart {
            workspace: Some(path("w")),
            allow_read: Some(vec![path("a")]),
            require_files: Some(n == 1),
        },
        cost: Cost {
            max_cost: Some(n),
            prices: Some(path("p")),
            cache: Some(if n == 1 {
                CacheChoice::Off
            } else {
                CacheChoice::Dir(path("c"))
            }),
        },
        limits: LimitsPart {
            call_depth: Some(n as usize),
            subtask_depth: Some(n as usize),
            loop_iterations: Some(n),
            turns: Some(n),
            tokens: Some(n),
            instructions: Some(n),
            memory: Some(n),
            wall_time_secs: Some(n),
        },
    }
}

fn json(c: &RunConfig) -> Map<String, Value> {
    match serde_json::to_value(c).expect("a config is JSON") {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

fn config(m: Map<String, Value>) -> RunConfig {
    serde_json::from_value(Value::Object(m)).expect("a config")
}

/// Every field of a config, as (part, field); `json_mode` is its own part.
fn leaves() -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for (part, v) in json(&full(1)) {
        match v {
            Value::Object(fields) => {
                out.extend(fields.keys().map(|f| (part.clone(), Some(f.clone()))))
            }
            _ => out.push((part, None)),
        }
    }
    out
}

/// A layer that sets one field only: `from`'s.
fn only(leaf: &(String, Option<String>), from: &RunConfig) -> RunConfig {
    let source = json(from);
    let mut m = Map::new();
    match &leaf.1 {
        Some(field) => {
            let value = source[&leaf.0][field].clone();
            let part = Map::from_iter([(field.clone(), value)]);
            m.insert(leaf.0.clone(), Value::Object(part));
        }
        None => {
            m.insert(leaf.0.clone(), source[&leaf.0].clone());
        }
    }
    config(m)
}

#[test]
fn a_full_config_sets_every_field_and_reads_back_the_same() {
    // 8 parts, 27 fields: a field added to a part and not to `full` fails here.
    assert_eq!(leaves().len(), 27);
    for n in [1, 2] {
        let text = serde_json::to_string(&full(n)).unwrap();
        assert_eq!(serde_json::from_str::<RunConfig>(&text).unwrap(), full(n));
    }
}

#[test]
fn every_field_a_layer_sets_wins_and_every_field_it_leaves_unset_is_kept() {
    let (under, over) = (full(1), full(2));
    for leaf in leaves() {
        for (below, above) in [(&under, &over), (&over, &under)] {
            let merged = below.clone().overlay(only(&leaf, above));
            let (got, want_below) = (json(&merged), json(below));
            for other in leaves() {
                let pick = |m: &Map<String, Value>| match &other.1 {
                    Some(f) => m[&other.0][f].clone(),
                    None => m[&other.0].clone(),
                };
                let want = if other == leaf {
                    pick(&json(above))
                } else {
                    pick(&want_below)
                };
                assert_eq!(pick(&got), want, "{leaf:?} over: {other:?}");
            }
        }
    }
}

#[test]
fn an_empty_layer_changes_nothing_and_a_full_one_replaces_everything() {
    for n in [1, 2] {
        assert_eq!(full(n).overlay(RunConfig::default()), full(n));
        assert_eq!(RunConfig::default().overlay(full(n)), full(n));
        assert_eq!(full(3 - n).overlay(full(n)), full(n));
    }
    assert_eq!(serde_json::to_string(&RunConfig::default()).unwrap(), "{}");
}

#[test]
fn the_result_shaping_part_is_the_models_sampling_json_mode_reply_cap_and_limits() {
    let shaping = json(&full(2).result_shaping());
    let kept: Vec<(String, Option<String>)> = leaves()
        .into_iter()
        .filter(|(part, field)| match field {
            Some(f) => shaping.get(part).and_then(|p| p.get(f)).is_some(),
            None => shaping.contains_key(part),
        })
        .collect();
    let parts: Vec<&str> = kept.iter().map(|(p, _)| p.as_str()).collect();
    for part in ["models", "sampling", "json_mode", "limits"] {
        assert!(parts.contains(&part), "{part} is not kept: {kept:?}");
    }
    assert!(kept.contains(&("calls".into(), Some("max_reply_bytes".into()))));
    for part in ["provider", "context", "cost"] {
        assert!(!parts.contains(&part), "{part} is kept: {kept:?}");
    }
    assert_eq!(parts.iter().filter(|p| **p == "calls").count(), 1);
}

#[test]
fn an_unknown_field_or_provider_is_refused() {
    let e = serde_json::from_str::<RunConfig>(r#"{"calls": {"concurency": 2}}"#).unwrap_err();
    assert!(e.to_string().contains("unknown field `concurency`"), "{e}");
    let e = serde_json::from_str::<RunConfig>(r#"{"provider": {"choice": "x"}}"#).unwrap_err();
    assert!(e.to_string().contains("unknown provider `x`"), "{e}");
    let e = serde_json::from_str::<RunConfig>(r#"{"api_key": "k"}"#).unwrap_err();
    assert!(e.to_string().contains("unknown field `api_key`"), "{e}");
}

#[test]
fn the_defaults_give_the_limits_and_call_settings_of_today() {
    let d = RunConfig::defaults();
    assert_eq!(d.limits.limits(16), Limits::default());
    assert_eq!(
        d.calls.concurrency,
        Some(crate::providers::DEFAULT_CONCURRENCY)
    );
    assert_eq!(LimitsPart::default().limits(16), Limits::default());
}

#[test]
fn a_dotenv_bound_only_lowers_and_says_what_it_did() {
    let line = Source::DotEnv { line: 2 };
    let cost = |n| RunConfig {
        cost: Cost {
            max_cost: n,
            ..Cost::default()
        },
        ..RunConfig::default()
    };
    let bounds = DotEnvBounds {
        max_cost: Some((5, line)),
        concurrency: None,
    };
    // (environment, flags, in force after, warning)
    let cases = [
        (None, None, Some(5), None),
        (None, Some(9), Some(5), Some(".env:2: TVM_MAX_COST lowers the value of --max-cost; the lower applies")),
        (Some(9), None, Some(5), Some(".env:2: TVM_MAX_COST lowers the value of the environment; the lower applies")),
        (Some(9), Some(3), Some(3), Some(".env:2: TVM_MAX_COST is above the value in force (from --max-cost), and a .env may only lower it; it is not taken")),
        (Some(3), None, Some(3), Some(".env:2: TVM_MAX_COST is above the value in force (from the environment), and a .env may only lower it; it is not taken")),
        (None, Some(5), Some(5), None),
    ];
    for (env, flag, want, warning) in cases {
        let (env, flags) = (cost(env), cost(flag));
        let stack = RunConfig::defaults()
            .overlay(env.clone())
            .overlay(flags.clone());
        let (got, warnings) = stack.clamp(&bounds, &env, &flags);
        assert_eq!(got.cost.max_cost, want);
        assert_eq!(warnings.first().map(String::as_str), warning);
    }
    let calls = DotEnvBounds {
        max_cost: None,
        concurrency: Some((32, line)),
    };
    let none = RunConfig::default();
    let (got, warnings) = RunConfig::defaults().clamp(&calls, &none, &none);
    assert_eq!(got.calls.concurrency, Some(16));
    assert_eq!(
        warnings,
        [".env:2: TVM_CONCURRENCY is above the value in force (from the default), and a .env may only lower it; it is not taken"]
    );
    let calls = DotEnvBounds {
        max_cost: None,
        concurrency: Some((4, line)),
    };
    let (got, warnings) = RunConfig::defaults().clamp(&calls, &none, &none);
    assert_eq!((got.calls.concurrency, warnings.len()), (Some(4), 0));
}
