//! Files that hold secrets (DESIGN §18): keys, tokens and passwords a workspace keeps
//! beside its code, which no model is sent unless the template's author named the file
//! in a literal `<path>`. One list, matched against a path relative to the workspace
//! (as written and as found, links followed), case-insensitively, since a file system
//! may be; a rule for a folder covers everything under it, and a rule without a `/`
//! matches at any depth, as in `.gitignore`.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use std::sync::OnceLock;

/// The rules, as the README lists them.
pub(super) const RULES: &[&str] = &[
    // Environment files: `.env`, `.env.local`, `.envrc`, ...
    ".env*",
    // Private keys and certificates with their keys, key stores.
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "id_*",
    // Folders of keys, credentials and history.
    ".git/",
    ".ssh/",
    ".gnupg/",
    ".aws/",
    ".azure/",
    ".kube/",
    ".docker/config.json",
    ".config/gcloud/",
    // Credential files of package managers and tools.
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    ".pgpass",
    ".htpasswd",
    ".vault-token",
    "credentials*",
    "secrets.*",
    "*.tfstate",
    "*.tfstate.*",
];

struct Compiled {
    set: GlobSet,
    /// The rule each pattern of `set` was made from.
    owner: Vec<&'static str>,
}

fn compiled() -> &'static Compiled {
    static SET: OnceLock<Compiled> = OnceLock::new();
    SET.get_or_init(|| {
        let mut builder = GlobSetBuilder::new();
        let mut owner = Vec::new();
        for &rule in RULES {
            let body = rule.trim_end_matches('/');
            // Every rule matches at any depth, and everything under what it matches.
            for p in [format!("**/{body}"), format!("**/{body}/**")] {
                let glob = GlobBuilder::new(&p)
                    .literal_separator(true)
                    .case_insensitive(true)
                    .build()
                    .expect("the secret rules are valid globs");
                builder.add(glob);
                owner.push(rule);
            }
        }
        Compiled {
            set: builder.build().expect("the secret rules compile"),
            owner,
        }
    })
}

/// The rule that `path` (relative, forward slashes) matches, if any.
pub(super) fn rule(path: &str) -> Option<&'static str> {
    let c = compiled();
    let hit = c.set.matches(path).into_iter().min()?;
    Some(c.owner[hit])
}

/// The first rule any of `names` matches: a path as written and as found.
pub(super) fn rule_of(names: &[&str]) -> Option<&'static str> {
    names.iter().find_map(|n| rule(n))
}

/// The warning for the secret files a search passed over, naming a few with their rules.
pub(super) fn passed_over(label: &str, secrets: &[(String, &str)]) -> String {
    const SHOWN: usize = 5;
    let named: Vec<String> = (secrets.iter().take(SHOWN))
        .map(|(path, rule)| format!("`{path}` (rule `{rule}`)"))
        .collect();
    let more = match secrets.len().saturating_sub(SHOWN) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    let files = if secrets.len() == 1 { "file" } else { "files" };
    format!(
        "{label}: {} {files} passed over as secrets: {}{more}",
        secrets.len(),
        named.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_match_at_any_depth_and_under_their_folders_whatever_the_case() {
        let cases = [
            (".env", Some(".env*")),
            ("app/.env.production", Some(".env*")),
            (".envrc", Some(".env*")),
            (".ENV", Some(".env*")),
            (".env/lib/site.py", Some(".env*")),
            ("certs/server.pem", Some("*.pem")),
            ("home/.ssh/config", Some(".ssh/")),
            (".git/config", Some(".git/")),
            ("deploy/id_ed25519", Some("id_*")),
            ("a/.docker/config.json", Some(".docker/config.json")),
            ("Credentials.json", Some("credentials*")),
            ("config/secrets.yml", Some("secrets.*")),
            ("src/main.rs", None),
            ("docs/environment.md", None),
            (".gitignore", None),
            ("keys/readme.md", None),
            ("src/identity.rs", None),
        ];
        for (path, want) in cases {
            assert_eq!(rule(path), want, "{path}");
        }
    }
}
