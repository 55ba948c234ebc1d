"""The rule deciding which repository files serving needs (tqdeploy.download.selection)."""

from tqdeploy.download.selection import select_serving_files

# A listing shaped like a real sharded multimodal checkpoint, plus what serving never reads.
LISTING = [
    ".gitattributes",
    "README.md",
    "LICENSE",
    "config.json",
    "generation_config.json",
    "preprocessor_config.json",
    "video_preprocessor_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.json",
    "merges.txt",
    "chat_template.jinja",
    "additional_chat_templates/tool_use.jinja",
    "model-00001-of-00002.safetensors",
    "model-00002-of-00002.safetensors",
    "model.safetensors.index.json",
    "consolidated.safetensors",
    "pytorch_model-00001-of-00002.bin",
    "pytorch_model.bin.index.json",
    "original/consolidated.00.pth",
    "original/params.json",
    "original/model.safetensors",
    "onnx/model.onnx",
    "subdir/model.safetensors",
    "configuration_custom.py",
]
SHARDS = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}


def test_index_narrows_weights_to_its_shards_and_drops_duplicates():
    sel = select_serving_files(LISTING, SHARDS)
    assert set(sel.files) == {
        "config.json",
        "generation_config.json",
        "preprocessor_config.json",
        "video_preprocessor_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "vocab.json",
        "merges.txt",
        "chat_template.jinja",
        "additional_chat_templates/tool_use.jinja",
        "model.safetensors.index.json",
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
        "configuration_custom.py",
    }
    assert "consolidated.safetensors" in sel.skipped  # not in the weight_map
    assert set(sel.files) | set(sel.skipped) == set(LISTING)


def test_pickles_original_and_subfolders_are_never_taken():
    sel = select_serving_files(LISTING, None)
    for path in (
        "pytorch_model-00001-of-00002.bin",
        "original/consolidated.00.pth",
        "original/params.json",
        "original/model.safetensors",
        "subdir/model.safetensors",
        "onnx/model.onnx",
        "README.md",
    ):
        assert path in sel.skipped, path


def test_without_an_index_every_top_level_safetensors_is_a_weight():
    sel = select_serving_files(["model.safetensors", "config.json", "extra.safetensors"], None)
    assert sel.files == ("config.json", "extra.safetensors", "model.safetensors")


def test_paths_that_could_leave_the_target_folder_are_never_taken():
    hostile = [
        "../evil.safetensors",
        "/etc/config.json",
        "additional_chat_templates/../../x.jinja",
        "a/../config.json",
        "..\\config.json",
        "./config.json",
        "additional_chat_templates//x.jinja",
    ]
    sel = select_serving_files(hostile + ["config.json", "model.safetensors"], None)
    assert sel.files == ("config.json", "model.safetensors")
