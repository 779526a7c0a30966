"""Export the small torch LSTM/GRU models in this folder to ONNX (TorchScript exporter, torch 2.13):
    python export_torch_rnn.py tests/data/onnx
irtool does not depend on torch; the .onnx files are committed."""
import torch, sys
torch.manual_seed(0)
class LSTMNet(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.rnn = torch.nn.LSTM(8, 16, num_layers=2, batch_first=True, bidirectional=True); s.head = torch.nn.Linear(32, 3)
    def forward(s, x):
        y, (h, c) = s.rnn(x); return s.head(y[:, -1]), h
class GRUNet(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.rnn = torch.nn.GRU(8, 12, num_layers=1); s.head = torch.nn.Linear(12, 2)
    def forward(s, x, h0):
        y, h = s.rnn(x, h0); return torch.sigmoid(s.head(y)), h
out = sys.argv[1]
torch.onnx.export(LSTMNet().eval(), (torch.randn(1, 7, 8),), f"{out}/torch_lstm.onnx", input_names=["x"], output_names=["logits", "h"], dynamo=False, opset_version=14)
torch.onnx.export(GRUNet().eval(), (torch.randn(6, 2, 8), torch.zeros(1, 2, 12)), f"{out}/torch_gru.onnx", input_names=["x", "h0"], output_names=["y", "h"], dynamo=False, opset_version=14)
