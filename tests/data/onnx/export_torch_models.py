"""Export the small torch models in this folder to ONNX (TorchScript exporter, torch 2.13):
    python export_torch_models.py tests/data/onnx
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

# dynamic batch (and for the encoder, sequence) dimensions: imported without --shape
torch.manual_seed(0)
class CNN(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.c1=torch.nn.Conv2d(3,8,3,padding=1); s.bn=torch.nn.BatchNorm2d(8); s.c2=torch.nn.Conv2d(8,16,3,stride=2); s.fc=torch.nn.Linear(16*7*7,10)
    def forward(s,x):
        x=torch.relu(s.bn(s.c1(x))); x=torch.nn.functional.max_pool2d(x,2); x=torch.relu(s.c2(x))
        return torch.softmax(s.fc(x.view(x.size(0),-1)),-1)
class MLP(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.l1=torch.nn.Linear(20,32); s.l2=torch.nn.Linear(32,4)
    def forward(s,x): return s.l2(torch.nn.functional.gelu(s.l1(x.flatten(1))))
class Enc(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.layer=torch.nn.TransformerEncoderLayer(32,4,64,batch_first=True,dropout=0.0)
    def forward(s,x): return s.layer(x)
class GRU(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.g=torch.nn.GRU(8,12,batch_first=True)
    def forward(s,x): return s.g(x)[0]
for name, m, x, axes in [("cnn",CNN(),torch.randn(2,3,32,32),{"x":{0:"N"}}),("mlp",MLP(),torch.randn(2,4,5),{"x":{0:"N"}}),
                          ("enc",Enc(),torch.randn(2,10,32),{"x":{0:"N",1:"S"}}),("gru",GRU(),torch.randn(2,5,8),{"x":{0:"N"}})]:
    torch.onnx.export(m.eval(), (x,), f"{out}/dynamic_{name}.onnx", input_names=["x"], output_names=["y"], dynamic_axes=axes, dynamo=False, opset_version=17)
