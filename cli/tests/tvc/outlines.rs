//! `tvc compile` of a program of a million tags and more holds its items' outlines, not
//! their syntax trees, building the items again from the files a window at a time to
//! check and to lower them: whatever the windows, it prints the diagnostics and writes
//! the bundle of the program held whole.

use super::threads::{library, one_file_and_many, program, tvc, TEMPLATES};
use std::path::Path;
use tv_compiler::driver::{self, Outlined};

/// The bundle of the program at `dir` checked and compiled whole.
fn whole_bundle(dir: &Path) -> Vec<u8> {
    let c = driver::check_paths(&[dir.to_path_buf()]).expect("the program");
    let (_, bundle) = driver::compile(&c).expect("it compiles");
    driver::bundle_bytes(&bundle)
}

#[test]
fn a_program_checked_from_outlines_has_the_diagnostics_of_one_held_whole() {
    let broken = [3, 199, 200, 201, 433, 799];
    for dir in one_file_and_many("outlined_diagnostics", &broken) {
        let paths = std::slice::from_ref(&dir);
        let whole = driver::check_paths(paths).expect("the program");
        let shown = whole.diags.render(&whole.sources, false);
        assert_eq!(whole.diags.error_count(), 3 * broken.len(), "{shown}");
        for (window, bundle) in [(1, false), (64, true), (333, false), (333, true)] {
            let how = Outlined { window, bundle };
            let c = driver::check_paths_outlined(paths, how).expect("the program");
            // It holds no item of the user's files, only what later stages read of them.
            for m in c.program.modules.iter().filter(|m| !m.std) {
                assert!(m.items.is_empty() && m.heads.as_ref().is_some_and(|h| !h.is_empty()));
            }
            let at = format!("{how:?} in {}", dir.display());
            assert_eq!(c.diags.render(&c.sources, false), shown, "{at}");
            assert!(c.bundle.is_none(), "{at}");
        }
    }
}

#[test]
fn a_bundle_compiled_from_outlines_is_the_bundle_made_whole() {
    for dir in one_file_and_many("outlined_bundle", &[]) {
        let whole = whole_bundle(&dir);
        let paths = std::slice::from_ref(&dir);
        // Windows of the first readings apart from those of the reading that lowers.
        for (read, lower) in [(1, 1), (5, 64), (333, 7), (TEMPLATES * 2, TEMPLATES * 2)] {
            let how = Outlined {
                window: read,
                bundle: false,
            };
            let mut c = driver::check_paths_outlined(paths, how).expect("the program");
            assert!(
                !c.diags.has_errors(),
                "{}",
                c.diags.render(&c.sources, false)
            );
            assert!(c.bundle.is_none());
            let bytes = driver::compile_to_bytes_in(&mut c, &mut Default::default(), lower)
                .unwrap_or_else(|_| panic!("windows of {read} and {lower}: errors"));
            assert!(
                bytes == whole,
                "windows of {read} and {lower} in {}",
                dir.display()
            );
        }
        // Lowered as they are checked, in the same reading.
        for window in [1, 7, 333, TEMPLATES * 2] {
            let how = Outlined {
                window,
                bundle: true,
            };
            let c = driver::check_paths_outlined(paths, how).expect("the program");
            let made = c.bundle.expect("made with the check").expect("no errors");
            assert!(made == whole, "windows of {window} in {}", dir.display());
        }
    }
}

#[test]
fn a_bundle_lowered_as_it_is_checked_numbers_the_standard_templates_called_and_only_those() {
    // Templates that call `repair_json`, by name or through a character reference the
    // plan cannot see, or name it in a prompt without calling it: the plan of the
    // standard templates made before the bodies are checked is right for the first,
    // and the bundle is made again after the check for the others.
    let calls = "\n<template name=\"fix\" params=\"t:string\"><task><instructions>Fixed: {{repair_json(t)}}</instructions></task></template>";
    let hidden = "\n<template name=\"fix\" params=\"t:string\"><task><instructions>Fixed: {{repair&#95;json(t)}}</instructions></task></template>";
    let names = "\n<template name=\"fix\" params=\"t:string\"><task><instructions>Say why repair_json exists: {{t}}</instructions></task></template>";
    for (name, extra, made_with_check) in [
        ("outlined_calls_std", calls, true),
        ("outlined_calls_std_hidden", hidden, false),
        ("outlined_names_std", names, false),
    ] {
        let text = library(0, 40, &[]).replace("</library>", &format!("{extra}\n</library>"));
        let dir = program(name, &[text]);
        let whole = whole_bundle(&dir);
        for window in [1, 16] {
            let how = Outlined {
                window,
                bundle: true,
            };
            let mut c =
                driver::check_paths_outlined(std::slice::from_ref(&dir), how).expect("the program");
            assert!(
                !c.diags.has_errors(),
                "{}",
                c.diags.render(&c.sources, false)
            );
            assert_eq!(c.bundle.is_some(), made_with_check, "{name}");
            let bytes = driver::compile_to_bytes_in(&mut c, &mut Default::default(), window)
                .unwrap_or_else(|_| panic!("{name}: errors"));
            assert!(bytes == whole, "{name}, windows of {window}");
        }
    }
}

#[test]
fn a_program_smaller_than_the_outline_size_is_held_whole_for_tvc_compile() {
    let dir = program("held_whole", &[library(0, 50, &[])]);
    let c = driver::check_paths_to_compile(std::slice::from_ref(&dir), true).expect("the program");
    assert!(c.program.modules.iter().all(|m| m.heads.is_none()) && c.bundle.is_none());
    let items: usize = c.program.modules.iter().map(|m| m.items.len()).sum();
    assert!(items >= 50);
    assert!(!driver::outlines(driver::OUTLINE_TAGS - 1) && driver::outlines(driver::OUTLINE_TAGS));
}

#[test]
fn tvc_compile_of_a_program_of_a_million_tags_prints_and_writes_what_one_held_whole_would() {
    // A comment full of `<` makes a program of 60 templates count as a large one.
    let padding = format!("<!-- {} -->\n", "<".repeat(driver::OUTLINE_TAGS));
    for (name, broken) in [("outlined_tvc", &[][..]), ("outlined_tvc_broken", &[7, 40])] {
        let (first, rest) = (library(0, 30, broken), library(30, 30, broken));
        let dir = program(name, &[padding.clone() + &first, rest]);
        let (dir_arg, out) = (dir.to_string_lossy(), dir.join("out.bin"));
        let paths = std::slice::from_ref(&dir);
        let outlined = driver::check_paths_to_compile(paths, true).expect("the program");
        assert!(outlined.program.modules.iter().any(|m| m.heads.is_some()));
        assert_eq!(outlined.bundle.is_some(), broken.is_empty());
        let (code, _, stderr) = tvc(2, &["compile", &dir_arg, "-o", &out.to_string_lossy()]);
        let (_, _, checked) = tvc(2, &["check", &dir_arg]);
        assert_eq!(stderr, checked);
        if broken.is_empty() {
            assert_eq!(code, 0, "{stderr}");
            assert!(std::fs::read(&out).expect("written") == whole_bundle(&dir));
        } else {
            assert_eq!(code, 1);
            assert!(stderr.contains("tvc: 6 errors"), "{stderr}");
            assert!(!out.exists());
        }
    }
}
