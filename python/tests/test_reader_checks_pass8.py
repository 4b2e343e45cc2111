"""Issue 40, eighth pass (G4): generate()'s chat= and details= took any object's truthiness
(details='no' returned the dict, chat='false' turned chat mode on), where every other flag is
strict. They are True or False (chat also None), numpy's bools included."""
import numpy as np
import pytest

import ragform

from conftest import shared_file


@pytest.fixture(scope="module")
def model():
    return ragform.Model(str(shared_file("fixtures/models/stories260K.gguf")), threads=1)


@pytest.mark.parametrize("value", ["no", "false", 0.5, 1, [], b"x"])
def test_details_and_chat_are_strict_flags(model, value):
    with pytest.raises(TypeError, match="details: expected True or False"):
        model.generate("Once", n_predict=2, details=value)
    with pytest.raises(TypeError, match="chat: expected True or False or None"):
        model.generate("Once", n_predict=2, chat=value)


def test_bools_of_python_and_numpy_are_flags(model):
    assert isinstance(model.generate("Once", n_predict=2, details=False), str)
    assert isinstance(model.generate("Once", n_predict=2, details=np.True_), dict)
    assert model.generate("Once", n_predict=2, chat=None) == model.generate("Once", n_predict=2)
