//! The Zed side of elelem-lsp: starts `elelem-lsp serve` (or the binary set in
//! `lsp.elelem.binary`) with the worktree's shell environment, and answers the server's
//! `workspace/configuration` request for the `elelem` section from `lsp.elelem.settings`.

use zed_extension_api::{self as zed, serde_json, settings::LspSettings, LanguageServerId, Result};

struct Elelem;

impl zed::Extension for Elelem {
    fn new() -> Self {
        Elelem
    }

    fn language_server_command(
        &mut self,
        language_server_id: &LanguageServerId,
        worktree: &zed::Worktree,
    ) -> Result<zed::Command> {
        let binary = LspSettings::for_worktree(language_server_id.as_ref(), worktree)
            .ok()
            .and_then(|settings| settings.binary);
        let command = binary
            .as_ref()
            .and_then(|binary| binary.path.clone())
            .or_else(|| worktree.which("elelem-lsp"))
            .ok_or_else(|| {
                "elelem-lsp is not on PATH: pip install elelem-lsp, or set lsp.elelem.binary.path"
                    .to_string()
            })?;
        let args = binary
            .and_then(|binary| binary.arguments)
            .unwrap_or_else(|| vec!["serve".to_string()]);
        Ok(zed::Command {
            command,
            args,
            env: worktree.shell_env(),
        })
    }

    fn language_server_workspace_configuration(
        &mut self,
        language_server_id: &LanguageServerId,
        worktree: &zed::Worktree,
    ) -> Result<Option<serde_json::Value>> {
        let settings = LspSettings::for_worktree(language_server_id.as_ref(), worktree)
            .ok()
            .and_then(|settings| settings.settings)
            .unwrap_or_default();
        Ok(Some(serde_json::json!({ "elelem": settings })))
    }
}

zed::register_extension!(Elelem);
