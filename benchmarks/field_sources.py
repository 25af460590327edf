"""The real datasets `benchmarks/field.py` measures, where they come from, and how to get them.

Every dataset is a folder of a public GitHub repository at a fixed commit. The images
are never committed here: ``python benchmarks/field.py --fetch`` clones each repository
(``git clone --filter=blob:none``, then ``git archive`` of the commit and folder) into
``/work/field-data/<name>/`` (``--data DIR`` elsewhere). When a bare mirror of the
repository already sits under ``$FIELD_MIRRORS`` (default ``/work/.mirror``, as
``<owner>+<name>/repo``), it is read instead of the network.

One dataset is built, not fetched: ``cifar-mirror`` is 900 CIFAR-10 images in an
ImageFolder tree with 6 test images that are train images mirrored and re-saved (the
planted copies are its provenance truth), made from ``/work/shared/data/cifar10-jpg.tar.gz``.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import random
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

MIRRORS = Path(os.environ.get("FIELD_MIRRORS", "/work/.mirror"))
CIFAR = Path("/work/shared/data/cifar10-jpg.tar.gz")


@dataclasses.dataclass(frozen=True)
class Source:
    name: str
    repo: str  # owner/name on GitHub; "" for a built dataset
    commit: str
    folder: str  # inside the repository ("" for all of it)
    kind: str  # what kind of data users bring this stands for
    truth: str  # what provenance says about leaks (see field_truth.py)
    numbers_identify: bool = True  # False: bare-number source names (25_jpg.rf.…) repeat across uploads
    exclude: tuple[str, ...] = ()  # paths left out of the archive (model weights, zips: large, and absent from mirrors)
    # Paths archived instead of ``folder`` (git archive reads excluded blobs too: a mirror missing a
    # training log's blobs cannot be archived whole, neudet's darknet_53/).
    include: tuple[str, ...] = ()


SOURCES: tuple[Source, ...] = (
    Source("chess", "jsansao/ChessPiecesv23", "246442c35465cdc9c917cdd0aa36698320def063", "",
           "Roboflow COCO export; fixed camera: 289 photos (2048x1371) of one chessboard",
           "roboflow source names; no source crosses splits"),
    Source("eggs", "Bangkit-TheFedProject/egg-candling-dataset", "a4297c3cc46555b194bfed5947af3b1e4bbfa443", "",
           "Roboflow classification CSV; homogeneous objects (candled eggs); names are capture times",
           "roboflow source names; bursts by capture time (20220709_000708)"),
    Source("limes", "AgrimonApp/Dataset-Limon-Tahiti", "122b473ad30671d8e80e5779ae98f9148a73508f", "",
           "Roboflow classification export; phone photos named IMG_YYYYMMDD_HHMMSS; augmented train copies",
           "roboflow source names; bursts by capture time"),
    Source("xray-wrist", "Ca1len/FractureMLDiagnosticsApp", "ef58a0c6e1aea19d0b14bd28cba05b0ea28dd7cf", "data",
           "Roboflow YOLO export; 1,089 greyscale hand and wrist X-rays; augmented versions of train sources",
           "roboflow source names, but not bare numbers: 25_jpg in val and in train are different X-rays",
           numbers_identify=False),
    Source("wrist-coco", "djoshi712/Wrist-Fracture-Images", "92c24f66b21b6fee746e17a9e5191e1af1abf972", "",
           "Roboflow COCO export; small (117) greyscale wrist X-ray set",
           "roboflow source names"),
    Source("deeppcb", "tangsanli5201/DeepPCB", "08e98c4db5922613fb97176eb3d6497d48260cb1", "PCBData",
           "industrial inspection, fixed camera: 3,000 PCB crops (template + tested), trainval.txt/test.txt lists",
           "an id (template and tested image) is in one list; by eye, a board region can recur under two ids"),
    Source("hymenoptera", "zhangtao7750/syn", "f0503091488f67b6809a6da2eaa43c25f2f277fc", "hymenoptera_data",
           "clean PyTorch ImageFolder (ants/bees tutorial set), web photos of many sizes",
           "none known (a clean set: every error is judged by eye)"),
    Source("apex-hud", "Franklin-Zhang0/Yolo-v8-Apex-Aim-assist", "5d7a4de2e1375cc8591297e1eb4f8000888c01e8", "dataset",
           "Roboflow YOLOv8 export; 2,379 game screenshots (Apex Legends frames grabbed from gameplay videos, "
           "416x416, HUD and menus shared by every frame); 3 rotated versions of each train source",
           "roboflow source names (<video>-mp4-t-<frame>); frames of one video cross train/valid "
           "(neighbouring frames are not known to provenance)"),
    Source("invoices", "BShaythem/extracteur_de_factures", "53398cc0bb35ab367c0a8f52ba2d28959961118a", "dataset",
           "Roboflow COCO export; 287 scanned and rendered invoices (640x640 stretched, several per template); "
           "3 rotated versions of each train source",
           "roboflow source names (bare numbers, one upload: 114_jpg, 164_png)"),
    Source("pakcoy", "3ggie-AB/Yolo-Pakcoy-Classification", "56771ef7ed997c94995710c4f35d2e46c4c1a591", "",
           "Roboflow YOLOv8 export (plants): 2,633 web pictures and phone screenshots of diseased bok choy "
           "(about 260x190), 3 brightness versions of each source, several uploads merged (bare numbers, bcNN, "
           "DMNN, Screenshot_<time>)",
           "roboflow source names: 165 of 216 sources cross splits; bare numbers left out (uploads reuse them); "
           "by eye, cropped copies under other names cross splits too",
           numbers_identify=False),
    Source("nail", "FahdAby/5_Nail_Disease_Machine-Learing", "0ee4eed0a7788efc1b05ad32a3f20750875e95b3", "",
           "Roboflow multi-label classification CSV (_classes.csv in each split folder): 1,225 nail pictures "
           "(640x640), mostly screenshots of web images; numbered uploads (11_PNG_jpg.rf.…)",
           "roboflow source names; NN_PNG sources are numbers that name different nails in different uploads "
           "(by eye); one web picture recurs under several screenshot names across splits (by eye)",
           numbers_identify=False, exclude=("Nail Disease Prediction.v1i.multiclass.zip",)),
    Source("bccd", "Shenggan/BCCD_Dataset", "d272fb14cdff6e473fafeeeba32aba5f560e9e43", "",
           "Pascal VOC layout (JPEGImages/, ImageSets/Main/{train,val,test}.txt): 364 blood-smear microscope "
           "fields (640x480); example.jpg beside it in no split",
           "none in names; by eye, one white cell is shot in shifted fields under two ids across splits"),
    Source("weeds", "Salli022/Weed-Detection", "32a5583af370eb3377fe6e34137ca50ab036ba65", "",
           "Roboflow COCO export (annotations in a dot-file, .annotations.coco.json): 167 camera photos "
           "(2784x1856, 5.2 MP) of weeds, DSC_#### in shooting order",
           "roboflow source names never cross splits; neighbouring DSC numbers are burst shots of one spot (by eye)"),
    Source("dental", "AayushKarna/dental-detection-backend", "0807cf912a8cfa22e2d59936bab030a2db192e6a", "data",
           "Roboflow YOLOv8 export with no data.yaml beside it (the repository's data.yaml names D:/ paths): "
           "1,269 panoramic dental X-rays (640x640 greyscale); flipped and turned versions of a source in train and val/test",
           "roboflow source names are 4-digit numbers of one upload: one number is one X-ray (by eye, flips and turns)"),
    Source("pestrice", "AhmadSubadri/dataset-pest-rice", "20a08ef55540d8740c218a00c44c607740104172", "",
           "Roboflow YOLOv8 export re-split by its user into dataset_split/ (data.yaml points there), the original "
           "train/ copy of all 530 images left beside it; rice pest photos (640x640) numbered in shooting order",
           "roboflow source names (one upload, no source in two splits); neighbouring numbers "
           "(images_0204/images_0205) are burst shots (by eye)",
           exclude=("Rice Plant Pest Detection.v1i.yolov8.zip", "runs", "yolov8n.pt")),
    Source("tomato", "RicoFerdian/tomato-dataset", "1d265a36442dd9fb8a2f7f1b962bce296b8fc8d1", "",
           "Pascal VOC layout with PNG frames (JPEGImages/, ImageSets/Main lists): 895 greenhouse pictures "
           "(400x500) of tomato trusses, several of each truss from a moving camera, names shuffled (tomatoN)",
           "none in names; by eye, the same truss seconds apart recurs across splits"),
    Source("tumor", "yasharisherenow/tumor-classification", "426b1307a8aabf6d90439a6b9f387be91e1fac97", "",
           "Roboflow classification CSV at scale: 12,887 brain MRI slices (384x384 greyscale; the Kaggle brain-tumour "
           "set under two naming schemes, Tr-gl_0064 and Tr-glTr_0000); versions turned, noised and flipped "
           "(use --max-images for a 300-3,000 subset)",
           "roboflow source names (794 sources in two splits); by eye, one slice recurs under other numbers "
           "and under the other naming scheme",
           exclude=("venv", "outputs", "assets")),
    Source("ecustfd", "Liang-yc/ECUSTFD-resized-", "59603e70c99807af46df9af3c2c507995fdd0029", "",
           "Pascal VOC lists (ImageSets/Main); 2,978 phone photos (816x612) of food portions, 19 classes each "
           "shot in one fixed setup (one shelf, one coin, one plate); apple001S(3) = portion, view, shot",
           "none from names; the repository's own lists put shots of one portion in train and val (portion id "
           "apple001 of apple001S(3)); different portions of one class look alike (by eye)"),
    Source("brush", "Henrry-Z/Brush_Defect_Dataset", "277fa2e9c47a4d0de1947c4511c51e591478537a", "",
           "Pascal VOC lists naming half of 6,160 grey industrial crops (640x512, bearing shells); turned and "
           "flipped versions of each capture scattered over train/val/test; names are write times 250 ms apart",
           "none from names; by eye, a capture's turned versions cross splits; different parts look alike"),
    Source("muzzle", "giovanebego1/Algoritm-recognize-Muzzle", "efd708ce4fc16bcdfbcdc12ec105a643da7b98d2", "",
           "Roboflow classification CSV (multi-label) of cattle-muzzle video frames, 30_sequence30_12_jpg.rf.*; "
           "an output folder exit/ beside the splits",
           "roboflow source names (none crosses splits); the video id 30_sequence30 does (by eye, one cow)",
           exclude=(".vscode",)),
    Source("cavity", "hongjin4790/cavity_detecting", "7971a686eb5c602a3d86416ab1d7f9ca46636155", "",
           "Roboflow COCO export (<split>/_annotations.coco.json) of web photos of teeth, plus a user-made "
           "train/_train_anno.json",
           "roboflow source names; by eye, 21 web photos uploaded twice under two names, in train and valid",
           exclude=("YOLOv5_train_cavitydataset.ipynb", "cavityDetection.ipynb", "cavityDetection_final.ipynb",
                    "__pycache__")),
    Source("cones", "Lakemonsters2635/Cones-and-Cells", "55af0c4094e2b80cfc1b193eb0d58179ee193dfa", "",
           "Roboflow darknet export: obj/ (809 images) with train.txt/valid.txt/test.txt naming Colab paths "
           "(/content/<project>/<split>/<name>), and a test/ folder",
           "every test/ image is byte-identical to an obj/ image (provenance: the export)",
           exclude=("Train.ipynb", "yolov3-tiny.conv.15", "yolov4-tiny.conv.29")),
    Source("uav", "zemlianin/uav", "c905795bb4dfcc349265126fc57f5ab170a98b4e", "",
           "Roboflow YOLOv8 export (data.yaml) of 528 drone-video frames and web pictures of vehicles "
           "(640x640); a macOS ._ AppleDouble file beside every image, Ultralytics runs/ and a test_gen/ copy "
           "of test beside the splits",
           "roboflow source names (14 cross splits); youtube-N numbers two videos' frames (no id); "
           "neighbouring frames of one video cross splits (by eye)",
           exclude=("yolov8n.pt", "runs/detect/train/weights", "runs/detect/train2/weights",
                    "runs/detect/train4/weights", "runs/detect/train5/weights")),
    Source("cctv", "adiandrianto/YOLOv8-clinical-trial-subject-counter", "54da3b8280865c4fcaeddb661426a08db2bc4e53",
           "dataset",
           "Roboflow YOLOv8 export: 560 fixed-camera CCTV frames (1920x1080) of one waiting room, 2 versions "
           "of each train source; data.yaml names a test split that is not there",
           "roboflow source names (none crosses splits; 1-14- is Windows batch numbering: recording 1, "
           "frame 14); neighbouring frames of one recording cross train/valid (by eye)"),
    Source("screws", "waterandstuff/AMV_Exam", "ce26c6a5c7aa130db75a4115eaabe8aebcd84a6c", "",
           "two Roboflow YOLOv11 exports (boxes, polygons) of one set of 100 webcam photos (640x480) of screws on "
           "one table, split differently, 3 augmented versions of each train source; the 100 originals beside them "
           "(Billeder/, picture_N.jpg); Ultralytics training runs named by project= (Model_poly/Poly_run12/) "
           "and prediction runs inside the test folders (test/Poly_run12/)",
           "roboflow source names: 39 sources in two splits across the two exports (byte-identical uploads); "
           "within one export none crosses; by eye, other arrangements of screws on the one table are not copies",
           exclude=("Screw Detection.v1-bounding-box-screw-detection.yolov11.zip",
                    "Miniprojekt.v2-polygon-screw-detection.yolov11.zip", "Model_Bounding/Box_run13/weights",
                    "Model_poly/Poly_run1/weights", "Model_poly/Poly_run12/weights", "output_*.mp4",
                    "Screw Detection.v1-bounding-box-screw-detection.yolov11/test/*/0.avi")),
    Source("webcam", "aitkherimed1228/Yolov10_project", "9b895c03691c7cd70d7005fbf48403476f22458f", "",
           "Roboflow YOLOv9 export (detection-2/, data.yaml naming Colab paths) of 355 frames of one webcam session "
           "(opencv_frame_N, 640x640 stretched): one person holding a wallet, a phone or earbuds; 2 versions of each "
           "train source; Ultralytics runs/ beside it",
           "roboflow source names (none crosses splits); by eye, neighbouring frames are one moment across splits "
           "(opencv_frame_112 in test, _111 in train: pHash 0), folded into one shared-scene note",
           exclude=("video.mp4", "weights", "runs/detect/predict/video.avi", "runs/detect/train/weights", ".config")),
    Source("cells", "liuzij0206/YOLO5s", "6fb23db82c3228cedb093ff315e43624fe57ecf5", "data",
           "YOLO layout (train/, valid/, no data.yaml) of 1,262 greyscale fluorescence-microscope fields (256x256) of "
           "dividing bacteria: a Roboflow export named strain, day and field (DR-WT-561-0314_36_jpg.rf.…) merged with "
           "265 plain-numbered frames (000100.jpg)",
           "roboflow source names (none crosses splits); every day (DR-WT-561-0314) has fields in both splits; by eye, "
           "fields of different days look alike (homogeneous cells) and no copy was seen"),
    Source("ufc", "0waisNoor/UfcFightAnalysis", "4982be7d62ba8199f9c13ded2b2c1570f4feb242", "",
           "Roboflow COCO export of 383 frames (640x640) grabbed from several UFC and Bellator fight videos, named "
           "<move><frame> (hooks1864, straight-punch3095), 3 versions (flips) of each train source; 2 fighter "
           "crops beside the splits",
           "roboflow source names (none crosses splits); by eye, neighbouring frames of one fight cross splits "
           "(hooks1864 in test, hooks1865 in train)"),
    Source("leprosy", "sa778888/leprosy_detection", "8ceb93b6bb9c5eb0a1b540b0e919e721f98b03cd", "",
           "Roboflow classification CSV export (valid/_classes.csv) of 1,598 phone photos of skin (416x416), "
           "re-split by its user into ttrain/ and ttest/ class folders beside valid/, 3 versions (noise, turns) "
           "of each source; names <class>_<DDMMYY day>_<shot>, some with a patient's birth date "
           "(Leprosy150963_210823_88)",
           "roboflow source names (3 cross ttrain/ttest); the day 210823 is shared by every class and patient; "
           "by eye, the birth-date prefix is no patient id (a man and a woman under Leprosy150963)"),
    Source("tracks", "SeishiUwU/nature-reveals-secrets", "1c6686ecf54990500e3a1b38f0e7ee2f2c8d5b84", "",
           "Roboflow classification CSV export renamed by its user (IMG_0001.jpg ... in each split, numbers "
           "restarting per split): 3,432 web pictures (640x640) of animal footprints in 6 classes; train holds "
           "turned, zoomed and cropped versions of each source",
           "none from names (IMG_0001 of test and of train are different pictures); by eye, stock photos "
           "uploaded twice cross splits, some as zoomed or turned versions"),
    Source("hc18", "rileyaquilano/Ultrasound_Final", "b9edfebd6f2cbdad56d63a9fc413cc09c43a6a3c", "",
           "medical greyscale: the HC18 fetal-head ultrasound challenge set as shipped (training_set/ 999 images of "
           "800x540 with an ellipse annotation PNG beside each, test_set/ 335), named <number>_HC.png with "
           "<number>_2HC.png for a second image of one fetus; each split numbered from 000",
           "none from names across splits (test_set/000_HC and training_set/000_HC are other fetuses: other pixel "
           "sizes in the two CSVs, other pictures by eye); 010_HC and 010_2HC are one fetus, both in training_set",
           exclude=(".ipynb_checkpoints", "Experiment Notebooks")),
    Source("damage", "xin-peng/2D_structural_damage_dataset", "5d0c15978bec3c3ca7402a4c2e7d0e38503add2d", "",
           "inspection, Pascal VOC lists (ImageSets/Main train/val/test/trainval of 6-digit ids): 2,697 images of "
           "concrete cracks and spalling (224 and 256 px crops from SDNET and PEER Hub, a few 4K UAV frames), "
           "YOLO labels/ beside them",
           "none from names (000001...); the lists are disjoint",
           exclude=tuple(f"JPEGImages/{n:06d}.jpeg" for n in (1869, 1884, 1906, 1918, 1929, 1949, 1954, 1963, 1969))),
    Source("prado", "menbom/prado-docs", "8123e1c6f447921acfae337732525970b001cabd", "",
           "documents: 316 specimen identity cards, passports and residence permits from the EU's PRADO register "
           "(web pictures, .jpg and .jfif) as a Hugging Face imagefolder, train/ and validation/ by country and "
           "document type, with metadata_classification.jsonl and metadata_extract.jsonl (MRZ lines) per split",
           "none from names; the MRZ lines in metadata_extract.jsonl name a specimen (one card pictured more than once); "
           "by eye, one specimen picture recurs under other numbers across splits"),
    Source("covidct", "KamalEyubov/sose2020-idv", "6b3a565629e81220ae89010dceaa2ef1566e23e0", "",
           "medical, split lists one set per class: COVID-CT (UCSD-AI4H) as a user's repository holds it, 746 CT "
           "slices cut from figures of COVID-19 papers (Images/CT_COVID, CT_NonCOVID: 150-1,600 px PNG and JPEG), "
           "Data-split/<class>/{train,val,test}CT_<class>.txt of bare names; beside them 1,000 LUNA16 slices "
           "rendered from .mhd volumes (no split) and the user's model plots",
           "the authors' COVID-CT-MetaInfo (patient per image, in their repository) puts no patient in two lists "
           "(213 COVID and 171 non-COVID patients); names carry the paper (medRxiv DOI, page, figure); by eye, "
           "one figure reprinted on another page under other patient numbers, and one picture under both classes",
           exclude=("*.pt",)),
    Source("covidct2", "tonydosreis/deeplearning-covid19", "1362e936d3805ee4602316681ead43b7d391633a", "",
           "medical, the same COVID-CT images in another user's repository: Data-split/<class>/{train,test}CT_<class>"
           ".txt listing Colab paths (/content/drive/My Drive/Colab Notebooks/Images/...), the files renamed since "
           "(x%0.png listed, x_0.png on disk), the authors' metadata tables with a Patient ID column in Info/",
           "the user re-split the images (train 309 + 362, test 40 + 35), still by patient: no patient of the "
           "metadata in both lists; the copies of covidct (one figure on two pages, one picture under two classes)",
           exclude=("*.npz", "Code/Data analysis.ipynb", "Presentation Stage 2A Tony Correia dos Reis.pptx",
                    "Rapport Stage 2A Tony Correia dos Reis.pdf")),
    Source("dance", "Mrutyunjay01/Identify-the-dance-form", "046101037e2b76d5085d7408f692d3939a93e05d", "",
           "Kaggle-style competition layout (HackerEarth 'Identify the dance form'): dataset/train/ (364) and "
           "dataset/test/ (156) web photos of Indian classical dance, dataset/train.csv (Image,target) and "
           "test.csv (Image), a user's submission and plots beside them",
           "none from names (bare numbers); by eye, web pictures uploaded twice cross train and test",
           exclude=("*.rar",)),
    Source("lfw-faces", "xuwei95/transfer-learning", "1d5a1b6208e5682b396e7ae4ef1818100f614ba6", "",
           "faces, people named in folders and files: 1,549 LFW pictures (250x250) of 12 public figures, an "
           "ImageFolder train/<First_Last>/<First_Last>_NNNN.jpg (1,484) and test/ (65: the 5 highest numbers of "
           "each person, George_W_Bush's 521-530); a face-recognition split, so every person is in both splits",
           "LFW numbers a person's pictures: <First_Last>_NNNN in train and in test is one picture (Donald_Rumsfeld "
           "0117-0121 are in both); other numbers of one person are other press photos, some of one event",
           exclude=("features", "model", "__pycache__", "test.jpg", "create.py", "demo.py", "getfeature.py",
                    "input_data.py", "test.py", "train.py", ".gitattributes")),
    Source("isic", "AmitBytesSage/Melanoma-Skin-Cancer-Detection-Model", "c9a7a7088c57aa7bc02939db9a233a1c44eb11ee",
           "Skin cancer ISIC The International Skin Imaging Collaboration",
           "held out (stop 59, probe 6): dermoscopy, the ISIC 9-class teaching subset as students commit it: "
           "ImageFolder Train/<class>/ISIC_NNNNNNN.jpg (2,241) and Test/<class>/ (118), all resized to 180x180",
           "ISIC numbers one picture: ISIC_0010512 in Test/actinic keratosis and Train/nevus is one file (159 "
           "byte-identical pairs, most across classes); ISIC_0025601(1) is a browser's second download"),
    Source("eyes", "cutsals/eye2", "11c8d651bba4792fc742295e3d88acd8e21466fc", "",
           "held out (stop 59, probe 6): fundus photos, the Kaggle eye-disease set resized to 256x256 in 4 class "
           "folders (ODIR <patient>_left/_right.jpg, EyePACS <patient>_left/_right.jpeg, _<n>_<n>.jpg, "
           "Glaucoma_<n>.png), no split: splits.csv is a user's random 80/20 split by file (seed 0)",
           "<patient>_left and <patient>_right of one extension are one patient's two eyes (a group, not a copy); "
           "ODIR and EyePACS both number patients from 0, so 13_left.jpg and 13_left.jpeg are two people"),
    Source("traps", "SoumyaGanguly95/CameraTrapChallenge", "42590cb0411d654999aebaad12d6106bf26ceb52",
           "ObjectDetection/animal_detection_with_yoloV7/data_prep",
           "held out (stop 59, probe 6): camera-trap photos of a study project, 100 each of badger, deer, fox and "
           "hare (`data/<species>-imgN.JPG`), split at random by a script into `output/train|val|test` "
           "(280/60/60, YOLO labels beside them), the originals left in `data/`",
           "`output/<split>/x` is a copy of `data/x`; EXIF DateTimeOriginal (372 of 400, Reconyx HC500) dates each "
           "shot: 469 pairs within 10 s of each other cross the splits (one trigger's burst, by eye)"),
    Source("signdigits", "ardamavi/Sign-Language-Digits-Dataset", "4b09433ef9d5c60602e8805bb54b8aa2428527f8",
           "Dataset",
           "held out (stop 59, probe 5): sign-language hand photos, 2,062 JPEGs (100x100) of digits 0-9 signed by "
           "218 students, one phone counter (IMG_NNNN) and one background per student; split here at random 80/20 "
           "per class into an ImageFolder train/ and test/ (seed 59), as users split it",
           "a student signs 0-9 in consecutive shots (IMG_1118 in 0/, the next in 1/ ...): neighbouring numbers "
           "are one hand against one background, in different classes; no picture is in two folders",
           ),
    Source("cmnist", "alan-w25/chinese-mnist", "f3410155fa6e8072e3bc57ecc4aba1fe66de0036", "backend/ml_model/data",
           "held out (stop 59, probe 5): tiny look-alike handwriting, Chinese MNIST (15,000 JPEGs of 64x64, 100 "
           "volunteers x 15 characters x 10 times, input_<volunteer>_<sample>_<character>.jpg) with the user's "
           "train_test_split tables processed/train.csv and test.csv (columns suite_id, sample_id, code: no path)",
           "a file name is one writing of one character: none is in two splits; one volunteer's 10 writings of a "
           "character are alike (a subject, not a copy)",
           ),
    Source("breakhis", "Pnyaa/Histopathological-Image-Classification", "536304750ca3aecce8fcc68166978bc7101838b5",
           "data-challenge",
           "held out (stop 60, probe 7): histopathology microscope fields, a course challenge's BreakHis subset at "
           "100X (700x460 PNG): Train/ named SOB_<B|M>_<type>-14-<slide>-100-<field>.png (422), Test/ renamed "
           "SOB_<n>.png (207)",
           "17 Test pictures are byte copies of Train pictures (git blob ids); a slide's fields are other views of "
           "one tissue (a slide group), neighbours overlap; the README names Test/SOB_18 as field 026 of slide "
           "13412 (Train/SOB_M_DC-14-13412-100-026)",
           ),
    Source("clothing", "alexeygrigorev/clothing-dataset-small", "11961516512414bf9f6c150a832cfd21b54a6b54", "",
           "held out (stop 60, probe 7): objects on a plain ground, the ML Zoomcamp clothing set: 3,781 volunteers' "
           "photos of garments (laid on floors, beds and walls), ImageFolder train/validation/test in 10 "
           "classes, files named by random UUIDs",
           "none from names (UUIDs; no byte-identical files); many different garments look alike on one ground",
           ),
    Source("gestures", "linto-ai/panoramic-dataset-for-gestures-detection", "7774270e0ae6748ffcc0abe635d2afc389966270", "",
           "held out (stop 61, probe 8): video frames in a Pascal VOC layout, 2,085 frames (1280x640) of one "
           "panoramic meeting-room camera, 7 clips named <clip><n> (frame0, vote102), each split at random by "
           "frame; ImageSets/Main/val.txt is a copy of train.txt",
           "frame numbers: 656 pairs of neighbouring frames of one clip cross train and test",
           exclude=("conf_video_gest", "video")),
    Source("gtea", "vincent317/GTEA_GAZE_PLUS-VOC2007-format-", "83ef17bad3ef3251e21aaf4d597b509d28317623", "",
           "held out (stop 61, probe 8): egocentric video frames in a Pascal VOC layout, 1,115 GTEA Gaze+ kitchen "
           "frames (960x720) numbered 000001-001115 in recording order, split at random by frame; label masks "
           "beside them",
           "frame numbers: neighbouring frames (one moment, the head moved) cross splits"),
    Source("whales", "jeheesom/findingfauna_data_whalefromabove", "92323c1c1fc770395f9aaa8226bb19915676e2ab", "",
           "held out (stop 61, probe 8): aerial photos of whales from above, Pascal VOC with lists of old-Mac CR "
           "line ends; 243 web photos (640 px wide) named <species><n>, 729 filtered versions in Other_Image_Sets/",
           "none from names; by eye, one photo cropped to two heights is in train and in test or val"),
    Source("ctdwt", "ChrisKalahiki/CT-Image-Analysis-using-DWT", "5466f73c391dcec361626d60a02834ca1393f9b8", "",
           "held out (stop 62, probe 9): DICOM CT slices of several patients, the Kaggle 'CT Medical Images' "
           "set as a course project committed it: 100 slices (512x512) of 54 TCGA patients in dicom_dir/ "
           "(ID_<n>_AGE_<age>_CONTRAST_<0|1>_CT.dcm), each again as a float64 TIFF of its Hounsfield units in "
           "tiff_images/, a copy of one at the root (image.dcm); no split: splits.csv is a user's random 80/20 "
           "split by file (seed 0)",
           "the TIFF of ID_<n> holds exactly its DICOM's Hounsfield units (one slice in two formats); DICOM "
           "PatientID names 54 patients, 1 to 6 slices each; 6 DICOMs are byte copies of another ID's"),
    Source("tabcomp", "srgautam9/TabComp", "7afe4183fbb37bb43a9bd5daf337f9b2f1366980", "",
           "held out (stop 62, probe 9): scanned pages of tables (UCSF Industry Documents, about 2100x1600 PNG) "
           "named <document>_<page>.png, a Hugging Face imagefolder per split (train/, test/: metadata.jsonl "
           "beside documents/), the same 74 files again in a second layout (Instruction-Tuning-Format/images/)",
           "each file of one layout is a byte copy of the same name in the other, in the same split; pages of "
           "document rzbj0037 are in train (1, 10) and test (3, 7, 8): one template, other numbers"),
    Source("parking", "bogdnnx/kurss", "322ff3db623d65dccc1136844a2c683f9f6d7f6a", "Parking_space.v22i.yolov8",
           "held out (stop 62, probe 10): fixed camera, a Roboflow YOLOv8 export of 218 frames of one parking-lot "
           "video (parking_lot_1_mp4-<n>, 854x480), split by frame; 2 versions of each train source (flipped, "
           "cropped up to 55 %, turned up to 45 degrees, sheared, some grey)",
           "roboflow source names: none crosses splits; by eye, neighbouring frames of the still lot are one "
           "picture (valid 138 and train 139 differ by 1.1 grey levels on average)"),
    Source("pills", "thorchh/myPillBox", "b443c9334bdd46b1d8edf96b45b2f759dd33cb6c", "api/datasets/pushin-pill-1",
           "held out (stop 62, probe 10): homogeneous objects, a Roboflow YOLOv8 export of 267 phone photos of pills "
           "in a hand or on a table (IMG_<n> in shooting order), 3 versions of each train source (turned and "
           "sheared up to 10 degrees)",
           "roboflow source names: none crosses splits; by eye, neighbouring IMG numbers are re-shots of one pill "
           "in one hand (IMG_6098 in test, IMG_6099 in train)"),
    Source("busi", "TongxinWang0405/BMI702_project", "922c9469dff20e816d3144880eadd28cdad8efa2", "Dataset_BUSI_with_GT",
           "held out (stop 62, probe 10): greyscale medical, the BUSI breast-ultrasound set (780 PNGs at 256x256 "
           "in benign/, malignant/, normal/, masks left out by the user), no split: splits.csv is a user's "
           "random 80/20 split by file (seed 0, random_manifest); a captions table beside it",
           "none from names; by eye, BUSI holds one ultrasound frame under two numbers (benign (135) and "
           "benign (58)), some under two classes (malignant (145) is benign (433) byte for byte)"),
    Source("hotdog", "truepositive/hotdog_nothotdog", "c719396d87a52102a78a683ac4394086a4a7190a", "",
           "held out (stop 62, probe 10): a clean ImageFolder, 250 web food photos (about 224 px wide) in "
           "train/{hotdog,not_hotdog}/ (200) and val/ (50), named by bare numbers",
           "none from names; no byte copy; a clean set: every error is judged by eye"),
    Source("xray-pneu", "szallik/Neural_networks_binary_classification", "13b5ee8c7a77d1244a1d4e00c8d0a9f8819423db",
           "data",
           "held out (stop 63, probe 13): greyscale medical, Kaggle's pediatric pneumonia chest X-rays (5,856 "
           "at 224x224, stored as RGB JPEG) re-split by the user 70/15/15 by file (seed 42) into "
           "{train,val,test}/{NORMAL,PNEUMONIA}/; names person<n>_<bacteria|virus>_<counter> and "
           "(NORMAL2-)IM-<n>-<k>",
           "none from pixels; person<n>_<kind> is one child (each kind numbers its persons from 1): 411 of "
           "2,653 such ids have X-rays in two splits; IM ids rarely repeat"),
    Source("neudet", "duanhan123/YOLOv3_PyTorch", "3d2a7e486d31f9d6155f9abcfbc6a9c5af5b4150", "",
           "held out (stop 63, probe 12): industrial inspection, the NEU-DET steel-surface defect crops (1,800 "
           "grey 200x200 JPEGs in NEU-DET/IMAGES/) in a YOLOv3 repository: NEU-DET/train.txt and val.txt list "
           "270 and 30 inclusion crops by a Windows path (e:/PycharmProjects/...), the test script reads "
           "test/images/ (300 inclusion crops); two more lists of all classes named \"... - 副本\" (copies)",
           "test/images/ holds every inclusion crop, byte for byte: the 270 of train.txt and the 30 of val.txt; "
           "by eye, NEU crops of one class a few numbers apart can be overlapping crops of one strip "
           "(inclusion_116 and 119)",
           include=("NEU-DET", "test", "common", "README.md")),
    Source("coffee", "VijayendraDwari/roastcoffeeClassifier", "68ca53075e666b8428364d7743c6d0234d2dcdca", "data",
           "held out (stop 63, probe 12): homogeneous objects, one coffee bean a photo on white paper (224x224 "
           "PNG, the Kaggle coffee-roast set), an ImageFolder of train/ (1,200) and test/ (400) by roast "
           "(Dark, Green, Light, Medium), a CSV of path, label and split beside it",
           "every test file is a byte copy of a train file of its class (400 of 400, by digest); 5 byte "
           "copies within train"),
    Source("sroie", "zzzDavid/ICDAR-2019-SROIE", "27be4271b251c256f695acbade9a801bffe85994", "data",
           "held out (stop 63, probe 12): scanned documents, the 626 ICDAR-2019 SROIE training receipts (about "
           "460x1000 JPEGs, renamed 000-625) with their key fields (key/*.json), no split: splits.csv is a user's "
           "random 80/20 split by file (seed 0, random_manifest)",
           "none from names (renumbered); by eye, shops print receipts of one template, and SROIE holds some "
           "receipts scanned twice",
           include=("data/img", "data/key")),
    Source("toys", "PrahasHegde/ToyDetection", "0929754164891c1607ac2b92d56150016789534f", "",
           "held out (stop 63, probe 11): a Roboflow COCO export of 759 phone photos (IMG_YYYYMMDD_HHMMSS, "
           "stretched to 640x640) of two toys moved about on one mat, shot 1-6 s apart over 20 minutes; 3 "
           "versions of each train source; beside each listed file a converter's byte copy img<N>.jpg (759 "
           "files the COCO files do not list)",
           "roboflow source names: none crosses splits; bursts by capture time (many held-out shots have a "
           "train shot of the same placement a second or two away)"),
    Source("ppe", "KrizziaConcepcion/hse-vision-classification", "5724655b5b29c623bd379597ff27676d6529f008", "",
           "held out (stop 63, probe 11): a Roboflow classification-CSV export (multi-label _classes.csv: "
           "helmet, vest, person) of 1,206 pictures, stock photos of workers and frames of a rooftop "
           "camera with a burnt-in clock (1280x720)",
           "roboflow source names are ppe_<n>, one upload, none repeats; by eye, a stock photo under two "
           "numbers (ppe_0546, ppe_0567) and rooftop frames a second apart (ppe_0591, ppe_0606)",
           exclude=("valid/ppe_0260_jpg.rf.4440818642b084109e540fca9b75f449.jpg",)),  # absent from the mirror
    Source("trash", "xDDreki/projekt_smieci", "274fa4be434b4db72c3877afbf25474d6cbba092", "",
           "held out (stop 63, probe 11): a Roboflow classification-CSV export of TrashNet (2,524 photos of "
           "household waste on white, 512x384, six classes), train only (the user splits in code); newer "
           "Roboflow names, a 20-letter id after .rf.",
           "roboflow source names (cardboard100, one a picture, none repeats); by eye, TrashNet holds one "
           "object shot twice from one spot under two numbers"),
    Source("cifar-mirror", "", "", "",
           "ImageFolder of 906 CIFAR-10 images; 6 test images are train images mirrored and re-saved",
           "the 6 planted mirrored copies"),
)


def by_name(name: str) -> Source:
    for source in SOURCES:
        if source.name == name:
            return source
    raise SystemExit(f"unknown dataset {name!r}: one of {', '.join(s.name for s in SOURCES)}")


def fetch(source: Source, dest: Path) -> None:
    """Put ``source`` under ``dest`` (a fresh folder); a mirror first, else a shallow clone."""
    if not source.repo:
        build_cifar_mirror(dest)
        return
    dest.mkdir(parents=True, exist_ok=True)
    mirror = MIRRORS / source.repo.replace("/", "+") / "repo"
    with tempfile.TemporaryDirectory() as tmp:
        if mirror.is_dir():
            git_dir = mirror / ".git" if (mirror / ".git").is_dir() else mirror  # a clone with a work tree
        else:
            git_dir = Path(tmp) / "repo.git"
            url = f"https://github.com/{source.repo}.git"
            subprocess.run(["git", "clone", "--bare", "--filter=blob:none", url, str(git_dir)], check=True)
        paths = list(source.include) or [source.folder or "."] + [f":(exclude){path}" for path in source.exclude]
        archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", source.commit, "--", *paths],
                                 check=True, capture_output=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(dest, filter="data")
    if source.folder:  # the folder's content is the dataset root
        inner = dest / source.folder
        for child in inner.iterdir():
            child.rename(dest / child.name)
        inner.rmdir()
    if source.name == "deeppcb":
        deeppcb_manifest(dest)
    if source.name in ("eyes", "busi"):
        random_manifest(dest)
    if source.name == "sroie":
        random_manifest(dest, pattern="img/*", label=False)
    if source.name == "signdigits":
        random_folders(dest, seed=59, test=0.2)
    if source.name == "ctdwt":
        random_manifest(dest, pattern="**/*", suffixes=(".dcm", ".tif"), label=False)
        ct_truth(dest)
    if source.name == "cmnist":
        cmnist_manifest(dest)


def deeppcb_manifest(root: Path) -> None:
    """``splits.csv`` from DeepPCB's ``trainval.txt`` / ``test.txt``, as a user turns the lists
    into a table by hand: an id's template (``_temp``) and tested image (``_test``) go to its list's split."""
    rows = []
    for listed, split in (("trainval.txt", "train"), ("test.txt", "test")):
        for line in (root / listed).read_text().split("\n"):
            if not line.strip():
                continue
            image = line.split()[0]  # group20085/20085/20085000.jpg
            stem = image[: -len(".jpg")]
            for suffix in ("_temp", "_test"):
                if (root / f"{stem}{suffix}.jpg").is_file():
                    rows.append((f"{stem}{suffix}.jpg", split))
    with (root / "splits.csv").open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["path", "split"])
        writer.writerows(rows)


def random_manifest(root: Path, seed: int = 0, test: float = 0.2, *, pattern: str = "*/*",
                    suffixes: tuple[str, ...] = (".jpg", ".jpeg", ".png"), label: bool = True) -> None:
    """``splits.csv`` of a set that has no split, as its users split it in code: 20 % of the files,
    drawn at random (``train_test_split``, ``validation_split``), to test; a label column (the class
    folder) when ``label``."""
    files = sorted(str(p.relative_to(root)) for p in root.glob(pattern) if p.suffix.lower() in suffixes)
    shuffled = files[:]
    random.Random(seed).shuffle(shuffled)
    held = set(shuffled[: int(len(files) * test)])
    with (root / "splits.csv").open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["path", "label", "split"] if label else ["path", "split"])
        writer.writerows((f, f.split("/")[0], "test" if f in held else "train") if label else
                         (f, "test" if f in held else "train") for f in files)


def ct_truth(root: Path) -> None:
    """``ctdwt.truth.json`` beside the tree: each slice's DICOM and its TIFF, one slice in two formats (the
    TIFF holds exactly the DICOM's Hounsfield units: checked with pydicom's modality LUT)."""
    pairs = [[f"dicom_dir/{t.stem}.dcm", f"tiff_images/{t.name}"] for t in sorted((root / "tiff_images").glob("*.tif"))
             if (root / "dicom_dir" / f"{t.stem}.dcm").is_file()]
    (root.parent / f"{root.name}.truth.json").write_text(json.dumps({"mirrored_copies": pairs}, indent=1))


def random_folders(root: Path, seed: int, test: float) -> None:
    """Class folders ``<class>/<file>`` moved to ``train/<class>/`` and ``test/<class>/``, a share
    ``test`` of each class (rounded) drawn with ``seed``: the random split users make of a set that
    comes unsplit."""
    rng = random.Random(seed)
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        files = sorted(p.name for p in folder.iterdir() if p.is_file())
        rng.shuffle(files)
        cut = round(len(files) * test)
        for index, name in enumerate(files):
            split = "test" if index < cut else "train"
            (root / split / folder.name).mkdir(parents=True, exist_ok=True)
            (folder / name).rename(root / split / folder.name / name)
        folder.rmdir()


def cmnist_manifest(root: Path) -> None:
    """``splits.csv`` from the user's ``processed/train.csv`` and ``test.csv``, whose rows name an image
    by three columns (``raw/images/input_<suite_id>_<sample_id>_<code>.jpg``), as the user writes it
    when ``init`` asks for a table with a path."""
    rows = []
    for split in ("train", "test"):
        with (root / "processed" / f"{split}.csv").open(newline="") as table:
            for line in csv.DictReader(table):
                name = f"raw/images/input_{line['suite_id']}_{line['sample_id']}_{line['code']}.jpg"
                rows.append((name, split))
    with (root / "splits.csv").open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["path", "split"])
        writer.writerows(rows)


def build_cifar_mirror(dest: Path, seed: int = 37) -> None:
    """60 train and 30 test images per class, plus 6 test images that are train images
    mirrored and saved again (JPEG quality 90): the planted leaks, listed in ``truth.json``
    beside the tree (outside the root the check scans)."""
    from PIL import Image, ImageOps

    rng = random.Random(seed)
    with tarfile.open(CIFAR) as tar:
        members = [m for m in tar.getmembers() if m.isfile() and m.name.endswith(".jpg")]
        per: dict[tuple[str, str], list[tarfile.TarInfo]] = {}
        for member in members:
            _, split, label, _ = member.name.split("/")
            per.setdefault((split, label), []).append(member)
        chosen: list[tuple[str, tarfile.TarInfo]] = []
        for (split, _label), items in sorted(per.items(), key=lambda kv: kv[0]):
            count = 60 if split == "train" else 30
            chosen += [(split, m) for m in rng.sample(sorted(items, key=lambda m: m.name), count)]
        dest.mkdir(parents=True, exist_ok=True)
        for split, member in chosen:
            out = dest / member.name.split("/", 1)[1]
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(tar.extractfile(member).read())
        trains = [m for s, m in chosen if s == "train"]
        planted = []
        for n, member in enumerate(rng.sample(trains, 6)):
            label = member.name.split("/")[2]
            image = Image.open(io.BytesIO(tar.extractfile(member).read())).convert("RGB")
            name = f"test/{label}/test_{90000 + n:05d}.jpg"
            ImageOps.mirror(image).save(dest / name, quality=90)
            planted.append([member.name.split("/", 1)[1], name])
    (dest.parent / f"{dest.name}.truth.json").write_text(json.dumps({"mirrored_copies": planted}, indent=1))


def ensure(source: Source, data: Path, allow_fetch: bool) -> Path:
    """The dataset's root under ``data``; fetched first when ``allow_fetch``, else an error naming the step."""
    root = data / source.name
    if root.is_dir() and any(root.iterdir()):
        return root
    if not allow_fetch:
        raise SystemExit(f"{root} is missing: run `python benchmarks/field.py --fetch --only {source.name}` "
                         f"(clones https://github.com/{source.repo or '-'} at {source.commit or '-'})")
    if root.exists():
        shutil.rmtree(root)
    fetch(source, root)
    return root
