//! Model identifiers: `provider:model` or a bare model name (DESIGN §3).

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Provider {
    OpenAi,
    Anthropic,
}

pub const PROVIDERS: &[(&str, Provider)] = &[
    ("openai", Provider::OpenAi),
    ("anthropic", Provider::Anthropic),
];

impl Provider {
    pub fn parse(s: &str) -> Option<Provider> {
        PROVIDERS.iter().find(|(n, _)| *n == s).map(|(_, p)| *p)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A model named by a template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelRef {
    /// Stated with a prefix or inferred from the name; `None` when neither.
    pub provider: Option<Provider>,
    pub name: String,
    pub explicit_provider: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelError {
    Empty,
    Whitespace,
    UnknownProvider(String),
    EmptyName,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::Empty => f.write_str("the model identifier is empty"),
            ModelError::Whitespace => f.write_str("a model identifier cannot contain white space"),
            ModelError::UnknownProvider(p) => write!(
                f,
                "unknown provider `{p}` in the model identifier (known: openai, anthropic)"
            ),
            ModelError::EmptyName => f.write_str("the model name after the provider is empty"),
        }
    }
}

/// Which provider serves a bare model name, from the vendors' naming schemes.
pub fn infer_provider(name: &str) -> Option<Provider> {
    const OPENAI: &[&str] = &[
        "gpt-", "o1", "o3", "o4", "chatgpt-", "text-", "davinci", "babbage",
    ];
    if OPENAI.iter().any(|p| name.starts_with(p)) {
        Some(Provider::OpenAi)
    } else if name.starts_with("claude-") {
        Some(Provider::Anthropic)
    } else {
        None
    }
}

pub fn parse_model(s: &str) -> Result<ModelRef, ModelError> {
    let trimmed = s.trim();
    if trimmed.is_empty() {
        return Err(ModelError::Empty);
    }
    if trimmed.chars().any(char::is_whitespace) {
        return Err(ModelError::Whitespace);
    }
    match trimmed.split_once(':') {
        Some((prefix, name)) => {
            let provider = Provider::parse(prefix)
                .ok_or_else(|| ModelError::UnknownProvider(prefix.to_string()))?;
            if name.is_empty() {
                return Err(ModelError::EmptyName);
            }
            Ok(ModelRef {
                provider: Some(provider),
                name: name.to_string(),
                explicit_provider: true,
            })
        }
        None => Ok(ModelRef {
            provider: infer_provider(trimmed),
            name: trimmed.to_string(),
            explicit_provider: false,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixed_and_bare_names_find_their_provider() {
        assert_eq!(
            parse_model("openai:gpt-4o-mini").unwrap().provider,
            Some(Provider::OpenAi)
        );
        assert_eq!(
            parse_model("claude-3-sonnet").unwrap().provider,
            Some(Provider::Anthropic)
        );
        assert_eq!(
            parse_model("o1-mini").unwrap().provider,
            Some(Provider::OpenAi)
        );
        assert_eq!(parse_model("llama3").unwrap().provider, None);
        // A local OpenAI-compatible server serves any name.
        assert_eq!(
            parse_model("openai:llama3").unwrap().provider,
            Some(Provider::OpenAi)
        );
    }

    #[test]
    fn malformed_identifiers_say_what_is_wrong() {
        assert_eq!(parse_model(" "), Err(ModelError::Empty));
        assert_eq!(parse_model("gpt 4"), Err(ModelError::Whitespace));
        assert_eq!(
            parse_model("foo:bar"),
            Err(ModelError::UnknownProvider("foo".into()))
        );
        assert_eq!(parse_model("openai:"), Err(ModelError::EmptyName));
    }
}
