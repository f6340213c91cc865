//! The words of a text, for matching texts by the words they share: the lines of an
//! inherited context a task is about (`inherit_context=subset`), a fresh-context search's
//! terms, and the template whose description best matches a spawned subtask's.

use std::borrow::Cow;

/// Which words of a text count.
#[derive(Clone, Copy, Debug, Default)]
pub struct Words<'a> {
    /// Words of fewer characters are left out.
    pub min_chars: usize,
    /// Words are cut inside camelCase too, so that `loginToken` is "login" and "token".
    pub split_camel: bool,
    /// Words (lowercased) left out: too common to say what a text is about.
    pub stop_words: &'a [&'a str],
}

/// The words of `text` in order, lowercased: runs of alphanumeric characters, cut (with
/// `split_camel`) before an uppercase letter that follows a lowercase letter or a digit.
///
/// A whole word is lowercased as text (a final `Σ` becomes `ς`) and measured as written;
/// a word cut out of camelCase is lowercased a character at a time and measured
/// lowercased, as fresh context's search always has, so that its terms stay the same.
/// A word that lowercasing leaves alone is borrowed from `text`.
pub fn words<'t>(text: &'t str, how: Words<'t>) -> impl Iterator<Item = Cow<'t, str>> + 't {
    let pieces = Pieces {
        rest: text,
        split_camel: how.split_camel,
    };
    pieces.filter_map(move |piece| {
        let (word, chars) = if how.split_camel {
            let word = lowercase(piece, |p| p.chars().flat_map(char::to_lowercase).collect());
            let chars = word.chars().count();
            (word, chars)
        } else {
            (lowercase(piece, str::to_lowercase), piece.chars().count())
        };
        let kept = chars >= how.min_chars && !how.stop_words.contains(&word.as_ref());
        kept.then_some(word)
    })
}

/// `piece` lowercased by `lower`, borrowed when no character of it changes.
fn lowercase<'t>(piece: &'t str, lower: impl Fn(&str) -> String) -> Cow<'t, str> {
    let unchanged = |c: char| {
        let mut l = c.to_lowercase();
        l.next() == Some(c) && l.next().is_none()
    };
    let same = if piece.is_ascii() {
        !piece.bytes().any(|b| b.is_ascii_uppercase())
    } else {
        piece.chars().all(unchanged)
    };
    if same {
        Cow::Borrowed(piece)
    } else {
        Cow::Owned(lower(piece))
    }
}

/// The runs of alphanumeric characters of a text, as written.
struct Pieces<'t> {
    rest: &'t str,
    split_camel: bool,
}

impl<'t> Iterator for Pieces<'t> {
    type Item = &'t str;

    fn next(&mut self) -> Option<&'t str> {
        let start = self.rest.find(char::is_alphanumeric)?;
        let rest = &self.rest[start..];
        let mut end = rest.len();
        let mut after_lower = false;
        for (at, c) in rest.char_indices() {
            let camel = self.split_camel && after_lower && c.is_uppercase();
            if !c.is_alphanumeric() || camel {
                end = at;
                break;
            }
            after_lower = c.is_lowercase() || c.is_numeric();
        }
        self.rest = &rest[end..];
        Some(&rest[..end])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const STOP: &[&str] = &["the", "and", "about"];

    fn all<'t>(text: &'t str, how: Words<'t>) -> Vec<String> {
        words(text, how).map(Cow::into_owned).collect()
    }

    #[test]
    fn words_are_lowercased_runs_of_letters_and_digits() {
        let any = Words::default();
        assert_eq!(
            all("Fix the LOGIN-form, v2!", any),
            ["fix", "the", "login", "form", "v2"]
        );
        let long = Words {
            min_chars: 4,
            ..any
        };
        assert_eq!(all("Fix the login form", long), ["login", "form"]);
    }

    #[test]
    fn camel_case_is_cut_before_an_uppercase_letter_after_a_lowercase_one_or_a_digit() {
        let camel = Words {
            split_camel: true,
            min_chars: 3,
            stop_words: STOP,
        };
        assert_eq!(
            all("loginToken HTTPServer utf8Text", camel),
            ["login", "token", "httpserver", "utf8", "text"]
        );
        assert_eq!(all("theSearch aboutIt", camel), ["search"]);
    }

    #[test]
    fn a_word_lowercasing_leaves_alone_is_borrowed() {
        let mut w = words("plain Mixed ünï Ünï", Words::default());
        assert!(matches!(w.next(), Some(Cow::Borrowed("plain"))));
        assert!(matches!(w.next(), Some(Cow::Owned(_))));
        assert!(matches!(w.next(), Some(Cow::Borrowed("ünï"))));
        assert!(matches!(w.next(), Some(Cow::Owned(_))));
    }

    // The three splitters this one replaced, as they were, as the reference.

    /// `inherit_context=subset`'s (the runtime's host), with `min_chars` 4.
    fn subset_words(s: &str) -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() >= 4)
            .map(str::to_lowercase)
            .collect()
    }

    /// Fresh context's search terms (the runtime's `context/search`).
    fn search_tokens(text: &str, stop: &[&str]) -> Vec<String> {
        let mut out = Vec::new();
        let mut emit = |word: &mut String| {
            if word.chars().count() >= 3 && !stop.contains(&word.as_str()) {
                out.push(word.clone());
            }
            word.clear();
        };
        let mut word = String::new();
        let mut prev_lower = false;
        for c in text.chars() {
            if !c.is_alphanumeric() {
                emit(&mut word);
                prev_lower = false;
                continue;
            }
            if c.is_uppercase() && prev_lower {
                emit(&mut word);
            }
            prev_lower = c.is_lowercase() || c.is_numeric();
            word.extend(c.to_lowercase());
        }
        emit(&mut word);
        out
    }

    /// Subtask matching's (the machine's `interp/subtask`).
    fn jaccard_words(s: &str) -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    }

    /// Text made of pieces where the splitters could differ: ASCII of both cases, digits,
    /// camelCase, stop words, letters whose lowercase is longer (İ) or depends on the
    /// word's end (Σ), titlecase, numerals that are not digits, and any character.
    fn text() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            4 => "[a-zA-Z0-9]{1,8}",
            2 => "[ .,_\\-\n/]{1,2}",
            2 => prop::sample::select(vec![
                "the", "The", "ABOUT", "and", "loginToken", "HTTPServer", "x2Y", "ΣΑΣ", "Σ",
                "σς", "İ", "İab", "aİ", "ı", "ß", "ǅa", "Äpfel", "٣", "²", "Ⅻ", "Ⓐb", "ﬃ",
            ])
            .prop_map(str::to_owned),
            1 => any::<char>().prop_map(String::from),
            1 => "\\PC{1,4}",
        ];
        prop::collection::vec(piece, 0..24).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn the_words_are_those_the_old_splitters_gave(s in text()) {
            let subset = Words { min_chars: 4, ..Words::default() };
            prop_assert_eq!(all(&s, subset), subset_words(&s));
            let search = Words { min_chars: 3, split_camel: true, stop_words: STOP };
            prop_assert_eq!(all(&s, search), search_tokens(&s, STOP));
            prop_assert_eq!(all(&s, Words::default()), jaccard_words(&s));
        }
    }
}
